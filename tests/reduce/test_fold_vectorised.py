"""The vectorised fold (`ir.vector.numerics.fold`) against the step-by-step fold: each output
walks its positions one at a time, `acc = op(acc, v)` from the identity, with the reduce
operators of `ir.vector.numerics.reduce` (the clip `max_f32` / `min_f32`, `add_f`, `mul_f`,
the wrapping and saturating i32 adds). Bit for bit, on values full of the awkward cases:
NaNs of several payloads and signs, infinities, both zeros, subnormals, i32 values near the
ends (wrapping and saturation), over regular groups (a reshape), irregular and interleaved
groups, outputs with no position, and masks of the cells folded."""

from __future__ import annotations

import numpy as np
import pytest

from ir.vector.numerics.fold import Groups, f32_keys, f32_of_keys, fold, fold_flits
from ir.vector.numerics.reduce import REDUCE_F32, REDUCE_I32

LO, HI = -(2**31), 2**31 - 1
F32_SPECIAL = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF, 0x7F800000, 0xFF800000, 0x00000000,
                        0x80000000, 0x00000001, 0x80000001, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000], np.uint32)
CASES = [("i32", op) for op in ("ADD", "ADD_SAT", "MAX", "MIN")] + [("f32", op) for op in ("ADD", "MUL", "MAX", "MIN")]


def _values(rng: np.random.Generator, scalar: str, shape: tuple) -> np.ndarray:
    if scalar == "i32":
        return rng.choice(np.array([HI, HI - 1, LO, LO + 1, 1, -1, 0, 12345], np.int32), shape)
    normal = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 30, shape)).astype(np.float32)
    special = rng.choice(F32_SPECIAL, shape).view(np.float32)
    return np.where(rng.random(shape) < 0.3, special, normal).astype(np.float32)


def _step_fold(scalar, op, values, plan, n_out, take=None):
    """(rows, N, P) -> (rows, n_out, P), one position at a time in position order."""
    fn, identity = (REDUCE_I32 if scalar == "i32" else REDUCE_F32)[op]
    dtype = np.int32 if scalar == "i32" else np.float32
    out = np.full((values.shape[0], n_out, values.shape[2]), identity, dtype)
    for r in range(values.shape[0]):
        for o in range(n_out):
            acc = np.full(values.shape[2], identity, dtype)
            for t in np.flatnonzero(plan == o):
                new = np.asarray(fn(acc, values[r, t]), dtype)
                acc = new if take is None else np.where(take[r, t], new, acc)
            out[r, o] = acc
    return out


def _step_tree(scalar, op, values, live):
    fn, identity = (REDUCE_I32 if scalar == "i32" else REDUCE_F32)[op]
    lanes = np.where(live, values, np.asarray(identity, values.dtype))
    return np.asarray(fn(fn(lanes[..., 0], lanes[..., 1]), fn(lanes[..., 2], lanes[..., 3])), values.dtype)[..., None]


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


PLANS = {
    "blocks": (np.repeat(np.arange(4), 5), 4),
    "interleaved": (np.array([2, 0, -1, 0, 1, 2, 2, 0, -1, 1, 0, 2, 1, 1, 0, -1, 2, 0, 1, 2]), 3),
    "uneven, an empty output": (np.array([0, 0, 0, 0, 0, 2, 2, -1, 0, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]), 5),
    "strided": (np.tile(np.arange(4), 5), 4),
    "nothing folded": (np.full(20, -1), 2),
}


@pytest.mark.parametrize("scalar,op", CASES)
@pytest.mark.parametrize("plan_name", list(PLANS))
@pytest.mark.parametrize("masked", [False, True])
def test_fold_is_the_step_by_step_fold(scalar, op, plan_name, masked):
    plan, n_out = PLANS[plan_name]
    rng = np.random.default_rng(abs(hash((scalar, op, plan_name, masked))) % 2**32)
    values = _values(rng, scalar, (3, len(plan), 4))
    take = rng.random(values.shape) < 0.7 if masked else None
    with np.errstate(all="ignore"):
        want = _step_fold(scalar, op, values, plan, n_out, take)
    got = fold(scalar, op, values, Groups(plan, n_out), take)
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("scalar,op", CASES)
@pytest.mark.parametrize("plan_name", list(PLANS))
@pytest.mark.parametrize("counted", [False, True])
def test_fold_flits_is_the_tree_then_the_step_by_step_fold(scalar, op, plan_name, counted):
    plan, n_out = PLANS[plan_name]
    rng = np.random.default_rng(abs(hash((scalar, op, plan_name, counted, 1))) % 2**32)
    values = _values(rng, scalar, (2, len(plan), 4))
    live = rng.random(values.shape) < 0.6
    live[:, 3] = False  # a flit with no live lane
    with np.errstate(all="ignore"):
        flits = _step_tree(scalar, op, values, live)
        take = live.any(-1)[..., None] if counted else None
        want = _step_fold(scalar, op, flits, plan, n_out, take)
    got = fold_flits(scalar, op, values, Groups(plan, n_out), live, counted)
    if scalar == "f32" and op in ("MAX", "MIN"):
        # the order-free fold skips NaN flits whatever their payload; the step fold does too
        assert not np.isnan(got).any()
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_fold_flits_with_every_lane_live_is_the_same_as_with_a_full_mask():
    rng = np.random.default_rng(3)
    values = _values(rng, "f32", (2, 20, 4))
    groups = Groups(np.repeat(np.arange(4), 5), 4)
    full = np.ones(values.shape, bool)
    for op in ("ADD", "MUL", "MAX", "MIN"):
        with np.errstate(all="ignore"):
            want = _step_fold("f32", op, _step_tree("f32", op, values, full), np.repeat(np.arange(4), 5), 4)
        np.testing.assert_array_equal(_bits(fold_flits("f32", op, values, groups, None)), _bits(want))


def test_f32_keys_order_the_values_and_invert_bit_for_bit():
    rng = np.random.default_rng(4)
    bits = np.concatenate([rng.integers(0, 2**32, 5000, dtype=np.uint64).astype(np.uint32), F32_SPECIAL])
    x = bits.view(np.float32)
    np.testing.assert_array_equal(_bits(f32_of_keys(f32_keys(x))), bits)
    ordered = x[~np.isnan(x)]
    keys = f32_keys(ordered)
    by_key = ordered[np.argsort(keys, kind="stable")]
    assert np.all(np.diff(by_key.astype(np.float64)) >= 0)  # increasing as numbers
    zeros = f32_keys(np.array([-0.0, 0.0], np.float32))
    assert zeros[0] < zeros[1]  # -0.0 below +0.0, as the clip Max / Min order them
