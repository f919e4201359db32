"""The rest of the element-wise chain compiled to VISA (parses back to itself, verifies,
the interpreter agrees with cpu bit for bit), the nine transcendentals against exact math
within their documented ulps, and the refusals at the user's line."""

from __future__ import annotations

import math

import numpy as np
import pytest

import npu_opt
from ir.vector.numerics import ULP_TOLERANCE
from npu_opt import (BinaryArgMode, ClipBinaryOpF32, ClipBinaryOpI32, axes, FpBinaryOp, FpMulAlu, FpTernaryOp, FpUnaryOp, FxpBinaryOp,
                     LogicBinaryOpF32, LogicBinaryOpI32, TernaryArgMode, bf16, f32, i32, m)
from npu_opt.testing import assert_close

from tests.vector.kernels import chain_kernel, cpu_equals_visa, float_kernel
from tests.vector.way_kernels import SPLIT_TIME, split_kernel

axes(A=8, E=64)
RNG = np.random.default_rng(21)
XI = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64).astype(np.int32)
XF = RNG.uniform(-5, 5, (8, 64)).astype(np.float32)
MUL1 = FpBinaryOp.MUL_F(FpMulAlu.MUL1)

CHAINS = {
    "logic_fxp_clip": lambda: (chain_kernel(i32, [
        ("vector_logic", LogicBinaryOpI32.BIT_XOR, 0x1234), ("vector_logic_with_mode", LogicBinaryOpI32.ARITH_RIGHT_SHIFT,
                                                               BinaryArgMode.MODE01, 4),
        ("vector_fxp_with_mode", FxpBinaryOp.SUB_FXP_SAT, BinaryArgMode.MODE10, 77),
        ("vector_clip_with_mode", ClipBinaryOpI32.MAX, BinaryArgMode.MODE10, -5)]), XI),
    "logic_f32": lambda: (chain_kernel(f32, [("vector_logic", LogicBinaryOpF32.BIT_OR, -0.0),
                                             ("vector_clip_with_mode", ClipBinaryOpF32.ADD, BinaryArgMode.MODE00, 1.0)]),
                          XF),
    "fma_div": lambda: (float_kernel([
        ("vector_fp_ternary_with_mode", FpTernaryOp.FMA_F, TernaryArgMode.MODE102, (0.3, -1.25)),
        ("vector_fp_binary_with_mode", MUL1, BinaryArgMode.MODE10, 2.0), ("vector_fp_unary", FpUnaryOp.TANH),
        ("vector_fp_div_with_mode", BinaryArgMode.MODE10, 1.0)]), XF),
    "reinterpret_4way": lambda: (float_kernel([("vector_fp_unary", FpUnaryOp.EXP), ("vector_reinterpret", i32),
                                               ("vector_reinterpret", f32), ("vector_fp_div", 3.0)]), XF),
    "split_concat": lambda: (split_kernel(f32, [("vector_fp_unary", FpUnaryOp.SIGMOID),
                                                ("vector_fp_ternary", FpTernaryOp.FMA_F, (2.0, -1.0))]), XF),
    "split_pad_i32": lambda: (split_kernel(i32, [], pad=True), XI),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_visa_agrees_with_cpu(name):
    cpu_equals_visa(*CHAINS[name]())


def test_mode_and_second_constant_are_printed():
    kernel, _ = CHAINS["fma_div"]()
    (line,) = [t for t in npu_opt.compile(kernel).text.splitlines() if " = vector " in t]
    assert "{unit=FP_TERNARY, op=FMA_F, arg=1050253722, mode=MODE102, arg1=3214934016}" in line
    assert "{unit=FP_DIV, op=DIV_F, arg=1065353216, mode=MODE10}" in line


# --- the nine transcendentals, inputs in each op's documented range ------------------------

_EXACT = {"EXP": np.exp, "NEG_EXP": lambda x: np.exp(-x), "SQRT": np.sqrt, "TANH": np.tanh,
          "SIGMOID": lambda x: 1.0 / (1.0 + np.exp(-x)), "ERF": np.vectorize(math.erf), "LOG": np.log,
          "SIN": np.sin, "COS": np.cos}
_RANGE = {"SQRT": (0.0, 1e6), "LOG": (1e-30, 1e30), "SIN": (-1e3, 1e3), "COS": (-1e3, 1e3), "ERF": (-4.0, 4.0)}


@pytest.mark.parametrize("name", sorted(_EXACT))
def test_transcendental_within_documented_ulps(name):
    lo, hi = _RANGE.get(name, (-20.0, 20.0))
    tol = ULP_TOLERANCE[name]
    assert tol.lo <= lo and hi <= tol.hi
    if name == "LOG":
        x = np.exp(RNG.uniform(np.log(lo), np.log(hi), (8, 64))).astype(np.float32)
    else:
        x = RNG.uniform(lo, hi, (8, 64)).astype(np.float32)
    got = npu_opt.run(float_kernel([("vector_fp_unary", getattr(FpUnaryOp, name))]), x)
    assert_close(got, None, exact=_EXACT[name](x.astype(np.float64)), ulps=getattr(FpUnaryOp, name))


def test_assert_close_ulps_refuses_a_two_ulp_error():
    exact = np.array([1.0, 2.0, 3.0])
    off = np.array([1.0, 2.0, np.nextafter(np.nextafter(np.float32(3.0), np.float32(9)), np.float32(9))], np.float32)
    assert_close(off, None, exact=exact, ulps=2)
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 3"):
        assert_close(off, None, exact=exact, ulps=FpUnaryOp.EXP)  # EXP's bound is 1 ulp


# --- refusals at the user's line ----------------------------------------------------------

def _first(kernel):
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


@pytest.mark.parametrize("steps, code", [
    ([("vector_logic", LogicBinaryOpI32.LEFT_SHIFT, 32)], "VE-SHIFT-1"),
    ([("vector_logic", LogicBinaryOpF32.BIT_AND, 1)], "VE-DTYPE-1"),
    ([("vector_logic", LogicBinaryOpI32.BIT_AND, 2**31)], "VE-CONST-1"),
    ([("vector_logic", LogicBinaryOpI32.BIT_AND, 1), ("vector_logic", LogicBinaryOpI32.BIT_AND, 2)], "VE-ALU-1"),
    ([("vector_fxp_with_mode", FxpBinaryOp.ADD_FXP, TernaryArgMode.MODE012, 1)], "VE-ENUM-4"),
    ([("vector_fxp_with_mode", FxpBinaryOp.LEFT_SHIFT, BinaryArgMode.MODE11, 40)], "VE-SHIFT-1"),
    ([("vector_fxp", FxpBinaryOp.ADD_FXP, 1), ("vector_logic", LogicBinaryOpI32.BIT_AND, 1)], "TYPE-1"),  # order
    ([("vector_fp_div", 2.0)], "TYPE-1"),                      # 8-way: FpDiv runs on the float path
    ([("vector_reinterpret", bf16)], "VE-REINT-1"),
    ([("vector_filter", m("A, E / 8"), None)], "VE-FILTER-1"),
    ([("vector_logic", LogicBinaryOpI32.BIT_AND, "1")], "TYPE-6"),
])
def test_refused_i32_chain(steps, code):
    d = _first(chain_kernel(i32, steps))
    assert d.code == code, d.render()
    assert d.file.endswith("kernels.py")


@pytest.mark.parametrize("d2, shown", [(bf16, "not bf16"), ("i32", "not 'i32'")])
def test_reinterpret_refusal_names_the_dtype(d2, shown):
    d = _first(chain_kernel(i32, [("vector_reinterpret", d2)]))
    assert d.code == "VE-REINT-1" and d.message.endswith(shown), d.message


@pytest.mark.parametrize("steps, code", [
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, 2.0)], "TYPE-6"),
    ([("vector_fp_ternary", FpTernaryOp.FMA_F, (2.0, 1e39))], "VE-CONST-2"),
    ([("vector_fp_ternary_with_mode", FpTernaryOp.FMA_F, BinaryArgMode.MODE10, (2.0, 1.0))], "VE-ENUM-4"),
    ([("vector_fp_binary", FpBinaryOp.ADD_F, 1.0), ("vector_fp_ternary", FpTernaryOp.FMA_F, (2.0, 1.0))], "VE-ALU-1"),
    ([("vector_fp_div", 2.0), ("vector_fp_binary", FpBinaryOp.ADD_F, 1.0)], "TYPE-1"),  # FpDiv follows Fp
    ([("vector_fp_div", 2.0), ("vector_fp_div", 2.0)], "TYPE-1"),
    ([("vector_fp_div_with_mode", BinaryArgMode.MODE10, "x")], "TYPE-6"),
])
def test_refused_float_chain(steps, code):
    d = _first(float_kernel(steps))
    assert d.code == code, d.render()


@pytest.mark.parametrize("split, concat, code", [
    ((m("A, E / 8"), m("E % 4")), None, "VE-SPLIT-2"),
    ((SPLIT_TIME, m("E % 2")), None, "VE-SPLIT-3"),
    ((SPLIT_TIME, m("E / 2 % 4")), None, "VE-SPLIT-4"),
    (None, (m("A, E / 8"), m("E % 4")), "VE-CONCAT-2"),
    (None, (m("A, E / 16"), m("E % 8")), "VE-CONCAT-3"),
    (None, (m("A, E / 8"), m("E % 4 # 8")), "VE-CONCAT-4"),
])
def test_refused_way_change(split, concat, code):
    kw = {k: v for k, v in (("split", split), ("concat", concat)) if v is not None}
    d = _first(split_kernel(f32, [], **kw))
    assert d.code == code, d.render()
    assert d.file.endswith("kernels.py")


def test_split_time_in_any_equivalent_spelling():
    """`A, E / 4` is `A, E / 8, E / 4 % 2`: the declared mappings compare by meaning."""
    k = split_kernel(i32, [], split=(m("A, E / 4"), m("E % 4")), concat=(m("A, E / 8"), m("E / 4 % 2, E % 4")))
    np.testing.assert_array_equal(npu_opt.run(k, XI), XI)
