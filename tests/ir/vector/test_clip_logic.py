"""Clip and Logic cluster ops on i32 and f32, against per-element Python oracles."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ir.vector import ClipBinaryOpF32, ClipBinaryOpI32, LogicBinaryOpF32, LogicBinaryOpI32
from tests.ir.vector.unit_numerics import apply_binary
from tests.ir.vector.oracles import same, MAX32, MIN32, bits_f32, f32_bits, fpick, sat32, wrap32

EDGE = [MIN32, MIN32 + 1, -5, -1, 0, 1, 5, MAX32 - 1, MAX32]
FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-45, -1e-45, math.inf, -math.inf, math.nan]


def clip_i32(name: str, a: int, b: int) -> int:
    if name == "MIN":
        return a if a <= b else b
    if name == "MAX":
        return a if a >= b else b
    if name == "ABS_MIN":
        return a if abs(a) < abs(b) else b
    if name == "ABS_MAX":
        return a if abs(a) > abs(b) else b
    return wrap32(a + b) if name == "ADD_FXP" else sat32(a + b)


@pytest.mark.parametrize("op", list(ClipBinaryOpI32), ids=repr)
def test_clip_i32(op):
    pairs = list(itertools.product(EDGE, EDGE))
    a, b = (np.array([p[i] for p in pairs], np.int32) for i in (0, 1))
    got = apply_binary(op, a, b).tolist()
    assert got == [clip_i32(op.name, x, y) for x, y in pairs]


def test_abs_of_int32_min_is_the_largest_magnitude():
    a = np.int32([MIN32, MIN32, 7])
    b = np.int32([MAX32, MIN32, -7])
    assert apply_binary(ClipBinaryOpI32.ABS_MAX, a, b).tolist() == [MIN32, MIN32, -7]
    assert apply_binary(ClipBinaryOpI32.ABS_MIN, a, b).tolist() == [MAX32, MIN32, -7]


def clip_f32(name: str, a: float, b: float) -> float:
    if name == "ADD":
        return float(np.float32(np.float64(a) + np.float64(b)))  # exact in f64, one rounding
    if name in ("MAX", "MIN"):
        return fpick(a, b, name == "MAX")
    if name == "ABS_MIN":
        return a if abs(a) < abs(b) else b
    return a if abs(a) > abs(b) else b


@pytest.mark.parametrize("op", list(ClipBinaryOpF32), ids=repr)
def test_clip_f32(op):
    pairs = list(itertools.product(FLOATS, FLOATS))
    a, b = (np.array([p[i] for p in pairs], np.float32) for i in (0, 1))
    pairs = list(zip(a.tolist(), b.tolist()))  # the f32 values
    with np.errstate(all="ignore"):
        want = [clip_f32(op.name, x, y) for x, y in pairs]
    got = apply_binary(op, a, b).tolist()
    for (x, y), g, w in zip(pairs, got, want):
        assert same(g, w), (op, x, y, g, w)


def test_nan_is_ignored_by_max_and_min_but_returned_when_both_are_nan():
    nan = np.float32(np.nan)
    assert apply_binary(ClipBinaryOpF32.MAX, nan, np.float32(-3.0)) == -3.0
    assert apply_binary(ClipBinaryOpF32.MIN, np.float32(2.0), nan) == 2.0
    assert np.isnan(apply_binary(ClipBinaryOpF32.MAX, nan, nan))


def logic_i32(name: str, a: int, b: int) -> int:
    s = b & 31
    ua, ub = a % 2**32, b % 2**32
    return wrap32({"BIT_AND": ua & ub, "BIT_OR": ua | ub, "BIT_XOR": ua ^ ub, "LEFT_SHIFT": ua << s,
                   "LOGIC_RIGHT_SHIFT": ua >> s, "ARITH_RIGHT_SHIFT": (a >> s) % 2**32}[name])


@pytest.mark.parametrize("op", list(LogicBinaryOpI32), ids=repr)
@settings(max_examples=15, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(MIN32, MAX32), st.integers(0, 31)), min_size=1, max_size=64))
def test_logic_i32(op, pairs):
    pairs += [(MIN32, 31), (-1, 0), (MAX32, 31)]
    a, b = (np.array([p[i] for p in pairs], np.int32) for i in (0, 1))
    assert apply_binary(op, a, b).tolist() == [logic_i32(op.name, x, y) for x, y in pairs]


@pytest.mark.parametrize("op", list(LogicBinaryOpF32), ids=repr)
def test_logic_f32_combines_bit_patterns(op):
    a = np.float32([-1.5, 2.0, np.nan, -0.0])
    b = np.float32([np.inf, -0.0, 1.0, 3.0])
    got = apply_binary(op, a, b)
    assert got.dtype == np.float32
    fn = {"BIT_AND": lambda x, y: x & y, "BIT_OR": lambda x, y: x | y, "BIT_XOR": lambda x, y: x ^ y}[op.name]
    want = [fn(f32_bits(x), f32_bits(y)) for x, y in zip(a.tolist(), b.tolist())]
    assert got.view(np.uint32).tolist() == want


def test_bitwise_abs_of_f32():
    x = np.float32([-2.5, 0.5, -0.0, -np.inf])
    mask = np.int32(0x7FFFFFFF).view(np.float32)
    got = apply_binary(LogicBinaryOpF32.BIT_AND, x, mask)
    assert got.tolist() == [2.5, 0.5, 0.0, math.inf] and not np.signbit(got).any()
    assert bits_f32(0x7FFFFFFF) != bits_f32(0x7FFFFFFF)  # the mask itself reads as a NaN


def test_bitwise_refuses_mixed_scalars():
    with pytest.raises(TypeError):
        apply_binary(LogicBinaryOpF32.BIT_OR, np.float32([1.0]), np.int32([1]))
