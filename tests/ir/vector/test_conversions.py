"""Fixed point <-> f32 conversions and the reinterpret, against Fraction oracles."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ir.vector import VectorRuleError
from ir.vector.numerics.conversions import fp_to_fxp, fxp_to_fp
from ir.vector.numerics.steps import run_step
from tests.ir.vector.oracles import MAX32, MIN32, f32_bits, round_f32

WIDTHS = [0, 1, 8, 15, 16, 30, 31]
EDGE_I = [MIN32, MIN32 + 1, -(2**24) - 1, -3, -1, 0, 1, 2**24 + 1, 2**25 + 3, MAX32 - 64, MAX32]


def fxp_oracle(x: int, w: int) -> float:
    return round_f32(Fraction(x, 2 ** (31 - w)))


def fp_oracle(x: float, w: int) -> int:
    if math.isnan(x):
        return MIN32 if math.copysign(1, x) < 0 else MAX32
    if math.isinf(x):
        return MAX32 if x > 0 else MIN32
    q = Fraction(x) * 2 ** (31 - w)
    n = math.floor(abs(q) + Fraction(1, 2))  # half away from zero
    n = n if q >= 0 else -n
    return max(MIN32, min(MAX32, n))


@pytest.mark.parametrize("w", WIDTHS)
@settings(max_examples=12, deadline=None)
@given(values=st.lists(st.integers(MIN32, MAX32), min_size=1, max_size=64))
def test_fxp_to_fp(w, values):
    values += EDGE_I
    got = fxp_to_fp(np.array(values, np.int32), w)
    assert got.dtype == np.float32
    assert [f32_bits(g) for g in got.tolist()] == [f32_bits(fxp_oracle(v, w)) for v in values]


@pytest.mark.parametrize("w", WIDTHS)
@settings(max_examples=12, deadline=None)
@given(values=st.lists(st.floats(width=32), min_size=1, max_size=64))
def test_fp_to_fxp(w, values):
    values += [0.5, -0.5, 1.5, -2.5, 2.0**31, -(2.0**31), 2.0**-30, -1e-45, 3e38, math.inf, -math.inf, -0.0]
    x = np.array(values, np.float32)
    got = fp_to_fxp(x, w)
    assert got.dtype == np.int32
    assert got.tolist() == [fp_oracle(v, w) for v in x.tolist()]


def test_fp_to_fxp_nan_goes_to_the_end_of_its_sign():
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001], np.uint32).view(np.float32)
    assert fp_to_fxp(nans, 31).tolist() == [MAX32, MIN32, MAX32]


def test_known_conversions():
    assert fxp_to_fp(np.int32([1, -1, MIN32, 0]), 31).tolist() == [1.0, -1.0, -(2.0**31), 0.0]
    assert fxp_to_fp(np.int32([2**30, MIN32]), 0).tolist() == [0.5, -1.0]  # Q31
    assert fxp_to_fp(np.int32([2**24 + 1, 2**24 + 3]), 31).tolist() == [2.0**24, 2.0**24 + 4]  # ties to even
    assert fp_to_fxp(np.float32([0.5, -0.5, 2.5, -1.0]), 31).tolist() == [1, -1, 3, -1]  # ties away
    assert fp_to_fxp(np.float32([0.25, -1.0, 1.0]), 0).tolist() == [2**29, MIN32, MAX32]


def test_round_trip_is_exact_where_representable():
    x = np.int32([-(2**24), -5, 0, 7, 2**24])
    assert (fp_to_fxp(fxp_to_fp(x, 31), 31) == x).all()


def test_width_out_of_range_is_ve_conv_1():
    for fn in (fxp_to_fp, fp_to_fxp):
        with pytest.raises(VectorRuleError) as info:
            fn(np.zeros(1, np.int32 if fn is fxp_to_fp else np.float32), 32)
        assert info.value.code == "VE-CONV-1"


def test_reinterpret_keeps_the_bits():
    bits = [0, 0x80000000, 0x7FFFFFFF, 0x00800000, 1, 0x7FC00001, 0x3F800000]
    as_i = np.array(bits, np.uint32).view(np.int32)
    f = run_step("REINTERPRET", "TO_F32", 0, as_i)  # f32 is stored as its bits
    assert f.dtype == np.uint32 and f.tolist() == bits
    assert run_step("REINTERPRET", "TO_I32", 0, f).tolist() == as_i.tolist()
    assert run_step("REINTERPRET", "TO_I32", 0, np.float32([1.0]).view(np.uint32)).tolist() == [0x3F800000]
