"""Constant Vector Engine chains on cpu against numpy oracles written from the op
definitions (int64 arithmetic for i32; float32 for the f32 clips), and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import ClipBinaryOpF32, ClipBinaryOpI32, FxpBinaryOp, f32, i32

from tests.vector.kernels import chain_kernel

RNG = np.random.default_rng(12)
X = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64).astype(np.int32)
SMALL = RNG.integers(-5000, 5000, (8, 64)).astype(np.int32)


def _wrap(v):
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def _sat(v):
    return np.clip(np.asarray(v, np.int64), -(2**31), 2**31 - 1).astype(np.int32)


ORACLES = {  # i32 op, constant -> oracle on int64
    "ADD_FXP": lambda x, c: _wrap(x.astype(np.int64) + c),
    "ADD_FXP_SAT": lambda x, c: _sat(x.astype(np.int64) + c),
    "SUB_FXP": lambda x, c: _wrap(x.astype(np.int64) - c),
    "SUB_FXP_SAT": lambda x, c: _sat(x.astype(np.int64) - c),
    "MUL_INT": lambda x, c: _wrap(x.astype(np.int64) * c),
    "LEFT_SHIFT": lambda x, c: _wrap(x.astype(np.int64) << c),
    "ARITH_RIGHT_SHIFT": lambda x, c: (x.astype(np.int64) >> c).astype(np.int32),
    "LOGIC_RIGHT_SHIFT": lambda x, c: ((x.astype(np.int64) & 0xFFFFFFFF) >> c).astype(np.uint32).view(np.int32),
}
CASES = [("ADD_FXP", 2**31 - 7), ("ADD_FXP_SAT", 2**30), ("SUB_FXP", -(2**31)), ("SUB_FXP_SAT", 12345),
         ("MUL_INT", -3), ("LEFT_SHIFT", 5), ("ARITH_RIGHT_SHIFT", 31), ("LOGIC_RIGHT_SHIFT", 7)]


@pytest.mark.parametrize("name, const", CASES)
def test_fxp_op_matches_the_integer_oracle(name, const):
    k = chain_kernel(i32, [("vector_fxp", getattr(FxpBinaryOp, name), const)])
    np.testing.assert_array_equal(npu_opt.run(k, X), ORACLES[name](X, const))


def test_scale_then_relu_then_clamp():
    """(x * 7 >> 2), ReLU, then min with 9000: three ALUs in one pass."""
    k = chain_kernel(i32, [("vector_fxp", FxpBinaryOp.MUL_INT, 7), ("vector_fxp", FxpBinaryOp.ARITH_RIGHT_SHIFT, 2),
                           ("vector_clip", ClipBinaryOpI32.MAX, 0), ("vector_clip", ClipBinaryOpI32.MIN, 9000)])
    want = np.minimum(np.maximum((SMALL.astype(np.int64) * 7) >> 2, 0), 9000).astype(np.int32)
    np.testing.assert_array_equal(npu_opt.run(k, SMALL), want)


def test_f32_relu_keeps_nan_out_and_signed_zero():
    x = RNG.standard_normal((8, 64)).astype(np.float32)
    x[0, :4] = [-0.0, 0.0, -1e-40, 3e38]
    k = chain_kernel(f32, [("vector_clip", ClipBinaryOpF32.MAX, 0.0)])
    got = npu_opt.run(k, x)
    want = np.where(x > 0, x, np.float32(0.0))  # ReLU; -0.0 and subnormal negatives give +0.0
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_fixed_point_to_float_and_back():
    """x (16 integer bits) -> f32 -> i32 with 20 integer bits (x / 16 rounded half away
    from zero) -> clip at 1000."""
    k = chain_kernel(i32, [("vector_fxp_to_fp", 16), ("vector_fp_to_fxp", 20),
                           ("vector_clip", ClipBinaryOpI32.MIN, 1000)])
    x = RNG.integers(-(2**24), 2**24, (8, 64)).astype(np.int32)  # exact in f32
    x[0, :4] = [8, -8, 24, -24]  # ties: 0.5, -0.5, 1.5, -1.5
    v = x.astype(np.float64) / 16
    want = np.minimum(np.sign(v) * np.floor(np.abs(v) + 0.5), 1000).astype(np.int32)
    np.testing.assert_array_equal(npu_opt.run(k, x), want)


def test_f32_clip_after_conversion():
    k = chain_kernel(i32, [("vector_fxp_to_fp", 31), ("vector_clip", ClipBinaryOpF32.MAX, -2.5)], out_dtype=f32)
    x = RNG.integers(-(2**20), 2**20, (8, 64)).astype(np.int32)
    np.testing.assert_array_equal(npu_opt.run(k, x), np.maximum(x.astype(np.float32), np.float32(-2.5)))


# --- refusals at the user's line --------------------------------------------------------

def _first(kernel):
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


@pytest.mark.parametrize("steps, code", [
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, 2**31)], "VE-CONST-1"),
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, -(2**31) - 1)], "VE-CONST-1"),
    ([("vector_fxp", FxpBinaryOp.MUL_INT, 1.5)], "VE-CONST-3"),
    ([("vector_fxp", FxpBinaryOp.LEFT_SHIFT, 32)], "VE-SHIFT-1"),
    ([("vector_fxp", FxpBinaryOp.ARITH_RIGHT_SHIFT, -1)], "VE-SHIFT-1"),
    ([("vector_clip", ClipBinaryOpF32.MAX, 0.0)], "VE-DTYPE-1"),
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, 1), ("vector_fxp", FxpBinaryOp.SUB_FXP, 1)], "VE-ALU-1"),
    ([("vector_fxp", ClipBinaryOpI32.MAX, 0)], "VE-ENUM-4"),
    ([("vector_fxp_to_fp", 40)], "VE-CONV-1"),
    ([("vector_fp_to_fxp", 31)], "TYPE-1"),                      # an i32 stream has no fp_to_fxp
    ([("vector_clip", ClipBinaryOpI32.MAX, 0), ("vector_fxp", FxpBinaryOp.ADD_FXP, 1)], "TYPE-1"),  # order
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, "1")], "TYPE-6"),
])
def test_refused_chain(steps, code):
    d = _first(chain_kernel(i32, steps))
    assert d.code == code, d.render()
    assert d.file.endswith("kernels.py")  # the user's call site inside the kernel body


def test_fxp_on_f32_is_not_offered():
    d = _first(chain_kernel(f32, [("vector_fxp", FxpBinaryOp.ADD_FXP, 1)]))
    assert d.code == "TYPE-1" and "vector_clip" in d.render()


def test_refusal_points_at_the_line_of_the_call():
    import inspect
    import tests.vector.kernels as src

    d = _first(chain_kernel(i32, [("vector_fxp", FxpBinaryOp.LEFT_SHIFT, 99)]))
    line = next(i for i, text in enumerate(inspect.getsource(src).splitlines(), 1) if "getattr(s, method)" in text)
    assert (d.code, d.line) == ("VE-SHIFT-1", line)
