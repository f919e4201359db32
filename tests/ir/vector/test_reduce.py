"""Intra- and inter-slice reducers: a left fold from the identity, against Python folds (one output
of the reducers' fold, `ir.vector.numerics.fold`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ir.vector import InterSliceReduceOpF32, InterSliceReduceOpI32, IntraSliceReduceOpF32, IntraSliceReduceOpI32
from tests.ir.vector.unit_numerics import apply_reduce
from tests.ir.vector.oracles import MAX32, MIN32, f32_bits, fpick, sat32, wrap32

I32_STEP = {"ADD": lambda a, b: wrap32(a + b), "ADD_SAT": lambda a, b: sat32(a + b), "MAX": max, "MIN": min}
I32_START = {"ADD": 0, "ADD_SAT": 0, "MAX": MIN32, "MIN": MAX32}
I32_OPS = [*IntraSliceReduceOpI32, *InterSliceReduceOpI32]
F32_OPS = [*IntraSliceReduceOpF32, *InterSliceReduceOpF32]


def fold(step, start, values):
    acc = start
    for v in values:
        acc = step(acc, v)
    return acc


@pytest.mark.parametrize("op", I32_OPS, ids=lambda o: f"{type(o).__name__}.{o.name}")
@settings(max_examples=12, deadline=None)
@given(rows=st.lists(st.lists(st.integers(MIN32, MAX32), min_size=5, max_size=5), min_size=1, max_size=6))
def test_i32_reduce_folds_left(op, rows):
    x = np.array(rows, np.int32)
    got = apply_reduce(op, x, axis=1)
    assert got.dtype == np.int32
    assert got.tolist() == [fold(I32_STEP[op.name], I32_START[op.name], r) for r in rows]
    assert apply_reduce(op, x.T, axis=0).tolist() == got.tolist()


def test_saturating_reduce_depends_on_the_order():
    x = np.int32([MAX32, 1, -1])
    assert apply_reduce(IntraSliceReduceOpI32.ADD_SAT, x).tolist() == MAX32 - 1
    assert apply_reduce(IntraSliceReduceOpI32.ADD_SAT, x[::-1].copy()).tolist() == MAX32
    assert apply_reduce(InterSliceReduceOpI32.ADD, x).tolist() == MAX32  # wrapping: order-free


def f32_step(name):
    def step(a, b):
        if name in ("MAX", "MIN"):
            return fpick(a, b, name == "MAX")
        with np.errstate(all="ignore"):
            exact = np.float64(a) + np.float64(b) if name == "ADD" else np.float64(a) * np.float64(b)
            return float(np.float32(exact))  # exact in float64, so one rounding
    return step


F32_START = {"ADD": 0.0, "MAX": -math.inf, "MIN": math.inf, "MUL": 1.0}


@pytest.mark.parametrize("op", F32_OPS, ids=lambda o: f"{type(o).__name__}.{o.name}")
@settings(max_examples=12, deadline=None)
@given(rows=st.lists(st.lists(st.floats(width=32, min_value=-1e6, max_value=1e6) | st.sampled_from(
    [0.0, -0.0, math.nan, 1e-45]), min_size=4, max_size=4), min_size=1, max_size=6))
def test_f32_reduce_folds_left(op, rows):
    x = np.array(rows, np.float32)
    got = apply_reduce(op, x, axis=-1).tolist()
    want = [fold(f32_step(op.name), F32_START[op.name], r) for r in x.tolist()]
    for g, w in zip(got, want):
        assert (math.isnan(g) and math.isnan(w)) or f32_bits(g) == f32_bits(w), (op, g, w)


def test_f32_sum_of_negative_zeros_is_positive_zero_and_max_ignores_nan():
    z = np.float32([-0.0, -0.0])
    assert not np.signbit(apply_reduce(InterSliceReduceOpF32.ADD, z))
    assert apply_reduce(IntraSliceReduceOpF32.MAX, np.float32([np.nan, -3.0, np.nan])) == -3.0
    assert apply_reduce(InterSliceReduceOpF32.MUL, np.float32([2.0, 3.0, 0.5])) == 3.0
