"""The stash: `vector_stash()` then one `Stash` operand; cpu against numpy, cpu == visa, and
the refusals of its order (write once, read once, same scalar and way, not in pair mode)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.agree import both_backends
from npu_opt import (ClipBinaryOpF32, ClipBinaryOpI32, Cmp, FpBinaryOp, FpMulAlu, FxpBinaryOp, Stash, TagMode, f32,
                     i32)

from tests.vector.kernels import float_kernel
from tests.vector_pair.kernels import pair_kernel, tagged_kernel

RNG = np.random.default_rng(23)
XI = RNG.integers(-(2**31), 2**31, (4, 32), dtype=np.int64).astype(np.int32)
XF = (RNG.standard_normal((8, 64)) * 3).astype(np.float32)
STASH = ("vector_stash",)


def _both(kernel, x):
    return both_backends(kernel, x, " stash_at=")[0]


def test_residual_max_of_a_wrapped_sum():
    k = tagged_kernel(i32, TagMode.ZERO, [STASH, ("vector_fxp", FxpBinaryOp.ADD_FXP, 2**30),
                                          ("vector_clip", ClipBinaryOpI32.MAX, Stash)], name="res_max")
    summed = ((XI.astype(np.int64) + 2**30 + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(_both(k, XI), np.maximum(summed, XI))


def test_stash_read_by_the_fxp_cluster_after_a_clip_write():
    """Stash at Fxp after a wrapping multiply, read by the clip's saturating add: sat(2x + 2x)."""
    k = tagged_kernel(i32, TagMode.COMPARISON([Cmp.TRUE] * 4), [("vector_fxp", FxpBinaryOp.MUL_INT, 2), STASH,
                                                               ("vector_clip", ClipBinaryOpI32.ADD_FXP_SAT, Stash)],
                      name="stash_sat")
    twice = (XI.astype(np.int64) * 2 + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(_both(k, XI), np.clip(twice + twice, -(2**31), 2**31 - 1).astype(np.int32))


def test_stash_on_the_float_path():
    """t = x * 3 is stashed 4-way and read 4-way: t * 0.5 + t."""
    k = float_kernel([("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL0), 3.0), STASH,
                      ("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL1), 0.5),
                      ("vector_fp_binary", FpBinaryOp.ADD_F, Stash)], name="stash_fp")
    t = XF * np.float32(3.0)
    np.testing.assert_array_equal(_both(k, XF), t * np.float32(0.5) + t)


def _first(kernel):
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


@pytest.mark.parametrize("steps, code", [
    ([("vector_clip", ClipBinaryOpI32.MAX, Stash)], "VE-STASH-1"),
    ([STASH, ("vector_fxp", FxpBinaryOp.ADD_FXP, Stash), ("vector_clip", ClipBinaryOpI32.MAX, Stash)], "VE-STASH-2"),
    ([STASH, ("vector_fxp", FxpBinaryOp.MUL_INT, 3), STASH], "VE-STASH-3"),
    ([STASH, ("vector_fxp_to_fp", 31), ("vector_clip", ClipBinaryOpF32.MAX, Stash)], "VE-STASH-4"),
    ([("vector_fxp_to_fp", 31), STASH], "TYPE-1"),              # FxpToFp owns no write port
])
def test_refused_stash(steps, code):
    d = _first(tagged_kernel(i32, TagMode.ZERO, steps, name="refused"))
    assert d.code == code, d.render()
    assert d.file.endswith("kernels.py")


def test_no_stash_in_pair_mode():
    d = _first(pair_kernel(i32, [("vector_fxp_zip", FxpBinaryOp.ADD_FXP), STASH]))
    assert d.code == "VE-STASH-5", d.render()
    d = _first(pair_kernel(i32, [STASH, ("vector_clip_zip", ClipBinaryOpI32.ADD_FXP)]))
    assert d.code == "TYPE-1", d.render()


def test_a_stash_read_refused_for_its_alu_is_that_refusal_alone():
    """Issue 28 item 16: the refused read returns a poisoned stream; spending its stash used to
    raise inside attrs, reported as a second, USAGE error blamed on the user."""
    k = float_kernel([("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL0), 3.0), STASH,
                      ("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL0), Stash)], name="alu_twice")
    report = npu_opt.check(k)
    assert [d.code for d in report.diagnostics] == ["VE-ALU-1"], [d.render() for d in report.diagnostics]
