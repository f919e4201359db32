"""The rest of the element-wise chain on cpu against independent numpy oracles: the Logic
cluster (i32 and f32), the `*_with_mode` forms, fma, fp_div, every fp_binary op and
multiplier ALU, the reinterpret, and the cell-moving way changes (split / concat)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import npu_opt
from npu_opt import (BinaryArgMode, ClipBinaryOpI32, FpBinaryOp, FpMulAlu, FpTernaryOp, FpUnaryOp, FxpBinaryOp,
                     LogicBinaryOpF32, LogicBinaryOpI32, TernaryArgMode, f32, i32)

from tests.vector.kernels import chain_kernel, float_kernel
from tests.vector.way_kernels import split_kernel

RNG = np.random.default_rng(12)
XI = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64).astype(np.int32)
XF = RNG.uniform(-6, 6, (8, 64)).astype(np.float32)
XF[0, :4] = [0.0, -0.0, 1e-40, -3.0]  # a zero of each sign, a subnormal


def _bits(a):
    return np.asarray(a).view(np.uint32)


def _wrap(v):
    """int64 -> int32 two's complement wrap (the oracle's own, not the engine's)."""
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


@pytest.mark.parametrize("op, c, want", [
    (LogicBinaryOpI32.BIT_AND, 0x0F0F0F0F, lambda x: x & 0x0F0F0F0F),
    (LogicBinaryOpI32.BIT_OR, -256, lambda x: x | -256),
    (LogicBinaryOpI32.BIT_XOR, 0x5A5A5A5A, lambda x: x ^ 0x5A5A5A5A),
    (LogicBinaryOpI32.LEFT_SHIFT, 7, lambda x: _wrap(x.astype(np.int64) << 7)),
    (LogicBinaryOpI32.LOGIC_RIGHT_SHIFT, 9, lambda x: (x.view(np.uint32) >> 9).astype(np.int32)),
    (LogicBinaryOpI32.ARITH_RIGHT_SHIFT, 31, lambda x: x >> 31),
])
def test_logic_i32(op, c, want):
    np.testing.assert_array_equal(npu_opt.run(chain_kernel(i32, [("vector_logic", op, c)]), XI), want(XI))


def test_logic_f32_combines_bit_patterns():
    """Clear the sign bit (and), set it (or) and flip it back (xor): |x|, -|x|, then |x|.
    The masks are f32 values of those bit patterns."""
    sign = np.array(0x80000000, np.uint32).view(np.float32)[()]
    rest = np.array(0x7FFFFFFF, np.uint32).view(np.float32)[()]  # a NaN pattern: its payload must survive
    k = chain_kernel(f32, [("vector_logic", LogicBinaryOpF32.BIT_AND, rest), ("vector_logic", LogicBinaryOpF32.BIT_OR, sign),
                           ("vector_logic", LogicBinaryOpF32.BIT_XOR, sign)])
    np.testing.assert_array_equal(_bits(npu_opt.run(k, XF)), _bits(XF) & np.uint32(0x7FFFFFFF))


def test_bitwise_abs_through_reinterpret():
    k = chain_kernel(f32, [("vector_reinterpret", i32), ("vector_logic", LogicBinaryOpI32.BIT_AND, 0x7FFFFFFF),
                           ("vector_reinterpret", f32)])
    np.testing.assert_array_equal(_bits(npu_opt.run(k, XF)), _bits(np.abs(XF)))


def test_reinterpret_rereads_bits():
    got = npu_opt.run(chain_kernel(f32, [("vector_reinterpret", i32)], out_dtype=i32), XF)
    np.testing.assert_array_equal(got, XF.view(np.int32))


@pytest.mark.parametrize("steps, want", [
    ([("vector_fxp_with_mode", FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10, 1000)], lambda x: _wrap(1000 - x.astype(np.int64))),
    ([("vector_fxp_with_mode", FxpBinaryOp.ADD_FXP, BinaryArgMode.MODE00, 5)], lambda x: _wrap(2 * x.astype(np.int64))),
    ([("vector_fxp_with_mode", FxpBinaryOp.MUL_INT, BinaryArgMode.MODE11, -7)], lambda x: np.full_like(x, 49)),
    # MODE10 of a shift: the constant is shifted by the stream's low five bits
    ([("vector_fxp_with_mode", FxpBinaryOp.LEFT_SHIFT, BinaryArgMode.MODE10, 3)],
     lambda x: _wrap(np.int64(3) << (x & 31).astype(np.int64))),
    ([("vector_logic_with_mode", LogicBinaryOpI32.LOGIC_RIGHT_SHIFT, BinaryArgMode.MODE10, -1)],
     lambda x: (np.uint32(0xFFFFFFFF) >> (x & 31).astype(np.uint32)).astype(np.int32)),
    ([("vector_clip_with_mode", ClipBinaryOpI32.ADD_FXP, BinaryArgMode.MODE01, 9)], lambda x: _wrap(x.astype(np.int64) + 9)),
])
def test_binary_modes_i32(steps, want):
    np.testing.assert_array_equal(npu_opt.run(chain_kernel(i32, steps), XI), want(XI))


def test_mode01_is_the_plain_method_in_visa():
    plain = npu_opt.compile(chain_kernel(i32, [("vector_fxp", FxpBinaryOp.SUB_FXP, 4)])).text
    moded = npu_opt.compile(chain_kernel(i32, [("vector_fxp_with_mode", FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE01, 4)])).text
    assert "mode=" not in plain and [t for t in plain.splitlines() if " = vector " in t][0].split(";")[0] == \
        [t for t in moded.splitlines() if " = vector " in t][0].split(";")[0]


MUL = {alu: FpBinaryOp.MUL_F(getattr(FpMulAlu, alu)) for alu in ("MUL0", "MUL1", "FMA")}


@pytest.mark.parametrize("op, mode, c, want", [
    (FpBinaryOp.ADD_F, None, 0.75, lambda x: x + np.float32(0.75)),
    (FpBinaryOp.SUB_F, None, 0.75, lambda x: x - np.float32(0.75)),
    (FpBinaryOp.SUB_F, BinaryArgMode.MODE10, 0.75, lambda x: np.float32(0.75) - x),
    (FpBinaryOp.DIV_F, None, 3.0, lambda x: x / np.float32(3.0)),
    (FpBinaryOp.DIV_F, BinaryArgMode.MODE10, 3.0, lambda x: np.float32(3.0) / x),
    (FpBinaryOp.ADD_F, BinaryArgMode.MODE00, 9.0, lambda x: x + x),
    *[(MUL[alu], None, 0.1, lambda x: x * np.float32(0.1)) for alu in MUL],
])
def test_every_fp_binary_op(op, mode, c, want):
    step = ("vector_fp_binary", op, c) if mode is None else ("vector_fp_binary_with_mode", op, mode, c)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_bits(npu_opt.run(float_kernel([step]), XF)), _bits(want(XF)))


def test_three_multipliers_in_one_pass():
    """MUL_F on each of its three ALUs in one pass (each ALU once)."""
    k = float_kernel([("vector_fp_binary", MUL[alu], c) for alu, c in (("MUL0", 1.5), ("MUL1", -0.25), ("FMA", 3.0))])
    want = XF * np.float32(1.5) * np.float32(-0.25) * np.float32(3.0)
    np.testing.assert_array_equal(_bits(npu_opt.run(k, XF)), _bits(want))


def _fma_oracle(a, b, c):
    """a * b + c exactly (fractions), rounded once to the nearest f32, ties to even."""
    out = np.empty(a.shape, np.float32)
    for i, (x, y, z) in enumerate(zip(a.ravel(), b.ravel(), c.ravel())):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        guess = np.float32(float(exact))
        cands = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
        dist = [abs(Fraction(float(v)) - exact) for v in cands]
        best = min(dist)
        ties = [v for v, d in zip(cands, dist) if d == best]
        out.ravel()[i] = min(ties, key=lambda v: int(np.array(v).view(np.uint32)) & 1)
    return out


@pytest.mark.parametrize("mode, args", [
    (None, lambda x, r, c: (x, r, c)),
    (TernaryArgMode.MODE102, lambda x, r, c: (r, x, c)),
    (TernaryArgMode.MODE020, lambda x, r, c: (x, c, x)),
    (TernaryArgMode.MODE112, lambda x, r, c: (r, r, c)),
])
def test_fma_rounds_once(mode, args):
    r, c = 1.0000001, -2.9999998  # products and sums that do not fit f32
    k = float_kernel([("vector_fp_ternary", FpTernaryOp.FMA_F, (r, c)) if mode is None else
                      ("vector_fp_ternary_with_mode", FpTernaryOp.FMA_F, mode, (r, c))])
    x = XF[:2]
    full = np.zeros_like(XF)
    full[:2] = x
    a, b, z = (np.broadcast_to(np.float32(v), x.shape) for v in args(x, r, c))
    np.testing.assert_array_equal(_bits(npu_opt.run(k, full)[:2]), _bits(_fma_oracle(a, b, z)))


def test_fp_div_stage_after_the_float_cluster():
    k = float_kernel([("vector_fp_binary", FpBinaryOp.ADD_F, 1.0), ("vector_fp_div", 7.0)])
    want = (XF + np.float32(1.0)) / np.float32(7.0)
    np.testing.assert_array_equal(_bits(npu_opt.run(k, XF)), _bits(want))


def test_fp_div_with_mode_divides_the_constant():
    with np.errstate(all="ignore"):
        want = np.float32(2.0) / XF  # 2 / +-0.0 is a signed infinity, 2 / 1e-40 overflows to one
    got = npu_opt.run(float_kernel([("vector_fp_div_with_mode", BinaryArgMode.MODE10, 2.0)]), XF)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_split_concat_keeps_every_cell():
    np.testing.assert_array_equal(npu_opt.run(split_kernel(i32, []), XI), XI)


def _exp_exact(x):
    return np.exp(x.astype(np.float64))


def test_split_float_path_then_concat():
    got = npu_opt.run(split_kernel(f32, [("vector_fp_unary", FpUnaryOp.EXP)]), XF)
    npu_opt.testing.assert_close(got, None, exact=_exp_exact(XF), ulps=FpUnaryOp.EXP)


def test_split_then_pad_writes_the_front_halves_in_time_order():
    """After a split, each time step holds four cells; padding them back to a flit keeps
    the (A, E) tensor whole."""
    got = npu_opt.run(split_kernel(f32, [("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL1), 2.0)], pad=True), XF)
    np.testing.assert_array_equal(_bits(got), _bits(XF * np.float32(2.0)))


def test_narrow_trim_on_i32():
    """The way changes take either scalar: an i32 stream through trim and pad is unchanged."""
    np.testing.assert_array_equal(npu_opt.run(float_kernel([], dtype=i32), XI), XI)
