"""f32 arithmetic (add, sub, mul, div, fma) against exact rational oracles, and the
argument modes."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ir.vector import BinaryArgMode, FpBinaryOp, FpDivBinaryOp, FpMulAlu, FpTernaryOp, FxpBinaryOp, TernaryArgMode
from tests.ir.vector.unit_numerics import apply_binary, apply_ternary
from ir.vector.numerics import fp as F
from tests.ir.vector.oracles import same, bits_f32, f32_bits, round_f32

SPECIAL = [0.0, -0.0, 1.0, -1.0, 1.5, 3.0, 0.1, -2.5e-3, 1e-45, -1e-45, 1.1754942e-38, 1.17549435e-38,
           3.4028235e38, -3.4028235e38, 1e20, math.inf, -math.inf, math.nan]
f32s = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)


def exact_op(name: str, a: float, b: float) -> float:
    """IEEE binary32 a (op) b by exact rationals, special values by the IEEE rules."""
    if any(map(math.isnan, (a, b))):
        return math.nan
    if any(map(math.isinf, (a, b))) or (name == "DIV_F" and b == 0):
        with np.errstate(all="ignore"):  # IEEE rules for the infinities, in float64 (exact here)
            return {"ADD_F": a + b if not (math.isinf(a) and math.isinf(b) and a != b) else math.nan,
                    "SUB_F": a - b if not (math.isinf(a) and math.isinf(b) and a == b) else math.nan,
                    "MUL_F": float(np.float64(a) * np.float64(b)),
                    "DIV_F": float(np.float64(a) / np.float64(b))}[name]
    qa, qb = Fraction(a), Fraction(b)
    q = {"ADD_F": qa + qb, "SUB_F": qa - qb, "MUL_F": qa * qb, "DIV_F": qa / qb if b else None}[name]
    sign_neg = {"ADD_F": math.copysign(1, a) < 0 and math.copysign(1, b) < 0,
                "SUB_F": math.copysign(1, a) < 0 and math.copysign(1, b) > 0,
                "MUL_F": (math.copysign(1, a) < 0) != (math.copysign(1, b) < 0),
                "DIV_F": (math.copysign(1, a) < 0) != (math.copysign(1, b) < 0)}[name]
    if q == 0:
        return -0.0 if sign_neg else 0.0
    r = round_f32(q)
    if r == 0:  # underflow to zero keeps the exact result's sign
        return math.copysign(0.0, float(q))
    return r


OPS = [FpBinaryOp.ADD_F, FpBinaryOp.SUB_F, FpBinaryOp.MUL_F(FpMulAlu.MUL0), FpBinaryOp.DIV_F]


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_special_value_grid(op):
    a = [x for x in SPECIAL for _ in SPECIAL]
    b = [y for _ in SPECIAL for y in SPECIAL]
    got = apply_binary(op, np.array(a, np.float32), np.array(b, np.float32))
    assert got.dtype == np.float32
    for x, y, g in zip(a, b, got.tolist()):
        assert same(g, exact_op(op.name, float(np.float32(x)), float(np.float32(y)))), (op, x, y, g)


@pytest.mark.parametrize("op", OPS, ids=repr)
@settings(max_examples=15, deadline=None)
@given(pairs=st.lists(st.tuples(f32s, f32s), min_size=1, max_size=64))
def test_random_pairs(op, pairs):
    a = np.array([p[0] for p in pairs], np.float32)
    b = np.array([p[1] for p in pairs], np.float32)
    got = apply_binary(op, a, b).tolist()
    for x, y, g in zip(a.tolist(), b.tolist(), got):
        assert same(g, exact_op(op.name, x, y)), (op, x, y, g)


def test_every_mul_alu_computes_the_same_product():
    a, b = np.float32([1.1, -3.0, 1e-30]), np.float32([2.2, 7.0, 1e-20])
    results = [apply_binary(FpBinaryOp.MUL_F(alu), a, b) for alu in FpMulAlu]
    assert all((r.view(np.uint32) == results[0].view(np.uint32)).all() for r in results)
    assert (apply_binary(FpDivBinaryOp.DIV_F, a, b) == apply_binary(FpBinaryOp.DIV_F, a, b)).all()


def exact_fma(a: float, b: float, c: float) -> float:
    if any(map(math.isnan, (a, b, c))) or any(map(math.isinf, (a, b, c))):
        with np.errstate(all="ignore"):  # IEEE rules for the specials, in float64
            return float(np.float64(a) * np.float64(b) + np.float64(c))
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:
        prod_neg = (math.copysign(1, a) < 0) != (math.copysign(1, b) < 0)
        both_neg = prod_neg and math.copysign(1, c) < 0 and (a == 0 or b == 0) and c == 0
        return -0.0 if both_neg else 0.0
    r = round_f32(q)
    return math.copysign(0.0, float(q)) if r == 0 else r


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(f32s, f32s, f32s), min_size=1, max_size=48))
def test_fma_is_one_rounding(triples):
    a, b, c = (np.array([t[i] for t in triples], np.float32) for i in range(3))
    got = apply_ternary(FpTernaryOp.FMA_F, a, b, c).tolist()
    for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got):
        assert same(g, exact_fma(x, y, z)), (x, y, z, g)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.lists(st.tuples(f32s, f32s, f32s), min_size=1, max_size=64))
def test_fma_is_one_rounding_long_run(triples):
    test_fma_is_one_rounding.hypothesis.inner_test(triples)


def test_fma_hard_cases_differ_from_two_roundings():
    # (1 + 2^-23)^2 - 1 = 2^-22 + 2^-46: an exact f32 tie, to even
    a = bits_f32(0x3F800001)
    got = F.fma_f(np.float32(a), np.float32(a), np.float32(-1.0))
    assert float(got) == round_f32(Fraction(a) * Fraction(a) - 1) == 2.0**-22
    # (1 + 2^-12)^2 + 2^-80 lies just above an f32 midpoint; float64 rounding would land
    # on the midpoint and a second rounding (ties to even) would go down
    x, z = 1.0 + 2.0**-12, 2.0**-80
    q = Fraction(x) * Fraction(x) + Fraction(z)
    naive = float(np.float32(np.float64(x) * np.float64(x) + np.float64(z)))
    correct = round_f32(q)
    assert naive != correct == 1.0 + 2.0**-11 + 2.0**-23
    assert float(F.fma_f(np.float32(x), np.float32(x), np.float32(z))) == correct


def test_binary_modes_pick_the_arguments():
    s, o = np.int32([10, 20]), np.int32([1, 2])
    sub = FxpBinaryOp.SUB_FXP
    assert apply_binary(sub, s, o).tolist() == [9, 18]
    assert apply_binary(sub, s, o, BinaryArgMode.MODE01).tolist() == [9, 18]
    assert apply_binary(sub, s, o, BinaryArgMode.MODE10).tolist() == [-9, -18]
    assert apply_binary(sub, s, o, BinaryArgMode.MODE00).tolist() == [0, 0]
    assert apply_binary(FxpBinaryOp.ADD_FXP, s, o, BinaryArgMode.MODE11).tolist() == [2, 4]


@pytest.mark.parametrize("mode", list(TernaryArgMode), ids=repr)
def test_ternary_modes_pick_the_arguments(mode):
    m, o0, o1 = np.float32([2.0]), np.float32([3.0]), np.float32([5.0])
    by_digit = {"0": 2.0, "1": 3.0, "2": 5.0}
    x, y, z = (by_digit[d] for d in mode.name[4:])
    assert apply_ternary(FpTernaryOp.FMA_F, m, o0, o1, mode).tolist() == [x * y + z]
