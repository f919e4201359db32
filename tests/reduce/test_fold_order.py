"""The intra-slice reduce's fold (`ir.vector.intra_reduce.reduce_time` / `reduce_counted`),
vectorised over rows and outputs, against a scalar oracle that walks the time steps one by
one: each output folds its own steps in time order from the identity, padding steps (-1)
are skipped, outputs interleave freely in time. Exact: the saturating add and the f32 add
are order-sensitive, so any reordering shows up in the bits."""

from __future__ import annotations

import numpy as np
import pytest

from ir.vector.intra_reduce import reduce_counted, reduce_time, time_plan
from ir.mapping.nodes import Symbol
from ir.vector.numerics.fold import Groups

LO, HI = -(2**31), 2**31 - 1


def _scalar_op(scalar: str, op: str):
    """(op on two Python / np.float32 scalars, identity), written independently of the code."""
    if scalar == "i32":
        wrap = lambda v: (v - LO) % 2**32 + LO  # noqa: E731
        return {"ADD": (lambda a, b: wrap(a + b), 0), "ADD_SAT": (lambda a, b: min(max(a + b, LO), HI), 0),
                "MAX": (max, LO), "MIN": (min, HI)}[op]
    f = np.float32
    return {"ADD": (lambda a, b: f(f(a) + f(b)), f(0.0)), "MUL": (lambda a, b: f(f(a) * f(b)), f(1.0)),
            "MAX": (lambda a, b: f(max(a, b)), f(-np.inf)), "MIN": (lambda a, b: f(min(a, b)), f(np.inf))}[op]


def _oracle(scalar, op, values, plan, n_out, tree, take=None):
    with np.errstate(over="ignore"):  # an f32 product may overflow to inf: the defined result
        return _walk(scalar, op, values, plan, n_out, tree, take)


def _walk(scalar, op, values, plan, n_out, tree, take):
    fn, ident = _scalar_op(scalar, op)
    rows, steps, _ = values.shape
    out = np.empty((rows, n_out, 4), values.dtype)
    for r in range(rows):
        for o in range(n_out):
            acc = [ident] * 4
            for t in range(steps):
                if plan[t] != o:
                    continue
                v = [values[r, t, k].item() if scalar == "i32" else values[r, t, k] for k in range(4)]
                live = [True] * 4 if take is None else list(take[r, t])
                if tree:
                    if not any(live):
                        continue
                    lane = [v[k] if live[k] else ident for k in range(4)]
                    acc[0] = fn(acc[0], fn(fn(lane[0], lane[1]), fn(lane[2], lane[3])))
                else:
                    acc = [fn(acc[k], v[k]) if live[k] else acc[k] for k in range(4)]
            out[r, o] = acc
    return out


def _values(rng, scalar, shape):
    if scalar == "i32":  # near the ends, so wrapping and saturation both happen
        return rng.choice(np.array([HI, HI - 3, LO, LO + 5, 7, -9, 0], np.int32), shape)
    mags = np.float32(10.0) ** rng.integers(-4, 8, shape).astype(np.float32)
    return (rng.standard_normal(shape).astype(np.float32) * mags).astype(np.float32)


CASES = [("i32", op) for op in ("ADD", "ADD_SAT", "MAX", "MIN")] + [("f32", op) for op in ("ADD", "MUL", "MAX", "MIN")]


@pytest.mark.parametrize("scalar,op", CASES)
@pytest.mark.parametrize("tree", [False, True])
def test_reduce_time_folds_each_output_in_time_order(scalar, op, tree):
    rng = np.random.default_rng(hash((scalar, op, tree)) % 2**32)
    steps, n_out = 23, 3
    plan = np.array([2, 0, -1, 0, 1, 2, 2, 0, -1, 1, 0, 2, 1, 1, 0, -1, 2, 0, 1, 2, 0, 0, 1])
    values = _values(rng, scalar, (3, steps, 4))
    live_lanes = rng.random((steps, 4)) < 0.75
    got = reduce_time(scalar, op, values, plan, n_out, tree, live_lanes)
    take = np.broadcast_to(live_lanes, values.shape) if tree else None
    want = _oracle(scalar, op, values, plan, n_out, tree, take)
    if tree:  # lanes 1-3 of a reduced packet hold the identity
        want[..., 1:] = _scalar_op(scalar, op)[1]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("scalar,op", CASES)
@pytest.mark.parametrize("tree", [False, True])
def test_reduce_counted_folds_only_the_counted_cells_in_time_order(scalar, op, tree, monkeypatch):
    import ir.vector.intra_reduce as intra

    rng = np.random.default_rng(hash((scalar, op, tree, 1)) % 2**32)
    steps, n_out = 17, 2
    plan = np.array([1, 0, 0, -1, 1, 1, 0, 1, 0, 0, 1, -1, 1, 0, 1, 0, 1])
    monkeypatch.setattr(intra, "_plan_groups", lambda axis, time, out_time: Groups(plan, n_out))
    monkeypatch.setattr(intra, "reduced_packet", lambda packet: tree)
    values = _values(rng, scalar, (2, steps, 4))
    take = rng.random(values.shape) < 0.6
    stored = values.view(np.uint32) if scalar == "f32" else values
    got = reduce_counted(scalar, op, stored, take, "c", Symbol("c", steps), Symbol("o", n_out), None)
    want = _oracle(scalar, op, values, plan, n_out, tree, take)
    if tree:
        want[..., 1:] = _scalar_op(scalar, op)[1]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_time_plan_maps_each_step_to_its_output_and_skips_padding():
    from ir.mapping import m  # noqa: PLC0415

    from npu_opt import axes

    axes(A=3, B=5)
    plan = time_plan("B", m("A, B # 6"), m("A"))
    want = np.array([a if b < 5 else -1 for a in range(3) for b in range(6)])
    np.testing.assert_array_equal(plan, want)
    plan = time_plan("B", m("B, A"), m("A"))
    np.testing.assert_array_equal(plan, np.tile(np.arange(3), 5))
