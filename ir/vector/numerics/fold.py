"""The reducers' fold, vectorised: many outputs at once, each the left fold of `reduce.py`.

A fold takes positions to outputs (`Groups`: per position its output, or -1 to skip) and
computes, for every output and lane, `acc = identity; acc = op(acc, v)` over its positions
in position order, with the operators of `ir.vector.numerics.reduce`, exactly what a
step-by-step fold computes (tests/reduce/test_fold_vectorised.py holds the two side by side). How:

- an order-free op gives the same result in any order: i32 `MAX` / `MIN` (integer order),
  i32 `ADD` (addition modulo 2^32), and f32 `MAX` / `MIN`, whose fold is the largest
  (smallest) non-NaN value in the order -inf < ... < -0.0 < +0.0 < ... < +inf, or the
  identity when every value is NaN (a NaN operand is ignored). Those fold with one numpy
  reduction per output group (`ufunc.reduceat`), f32 as integer keys of that order, so the
  result's bits are the chosen value's.
- the others (f32 `ADD` and `MUL`, whose roundings depend on the order; the saturating i32
  `ADD_SAT`) run as many array steps as the largest group has positions, step k applying
  the k-th position of every group at once. f32 steps use the plain IEEE ufunc and turn
  NaNs into the canonical NaN once at the end: a NaN accumulator stays NaN under add and
  multiply, so only the last canonicalisation shows (as after every step in `add_f`).

`take` (optional, shaped like the values) marks the cells folded; another cell leaves its
accumulator as it is (a padded axis's dead cells, by the Valid Count Generator).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.numerics._arrays import canonical_nan
from ir.vector.numerics.reduce import REDUCE_F32, REDUCE_I32

__all__ = ["Groups", "reducer", "fold", "fold_flits", "tree", "f32_keys", "f32_of_keys", "ORDER_FREE"]

ORDER_FREE = {"i32": frozenset({"ADD", "MAX", "MIN"}), "f32": frozenset({"MAX", "MIN"})}
_RAW_F32 = {"ADD": np.add, "MUL": np.multiply}


class Groups:
    """Positions by output, of `plan` (per position its output in 0 ... n_out - 1, or -1:
    skipped): `order` the folded positions sorted by (output, position),
    `starts` where each non-empty output's run begins in `order`, `outs` those outputs,
    `table` (steps, outputs) the k-th position of each non-empty output (`fill` False where
    an output has fewer than k + 1; None when every output has as many); `blocks` = k when
    output j is exactly positions j k ... j k + k - 1 (None otherwise). Read-only arrays:
    a plan is shared by every fold of the same mappings."""

    __slots__ = ("n_out", "order", "starts", "outs", "table", "fill", "blocks")

    def __init__(self, plan: np.ndarray, n_out: int) -> None:
        plan = np.asarray(plan, np.int64)
        live = np.flatnonzero(plan >= 0)
        order = live[np.argsort(plan[live], kind="stable")]
        groups = plan[order]
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]]) if len(order) else np.zeros(0, np.int64)
        counts = np.diff(np.r_[starts, len(order)])
        steps = int(counts.max()) if len(counts) else 0
        rank = np.arange(len(order)) - np.repeat(starts, counts)
        column = np.repeat(np.arange(len(starts)), counts)
        table = np.zeros((steps, len(starts)), np.int64)
        table[rank, column] = order
        fill = None
        if len(counts) and counts.min() != steps:
            fill = np.zeros((steps, len(starts)), bool)
            fill[rank, column] = True
        self.n_out, self.order, self.starts, self.outs = n_out, order, starts, groups[starts]
        self.table, self.fill = table, fill
        # every position folded, output j the j-th run of `blocks` consecutive ones: a reshape
        self.blocks = steps if (fill is None and len(order) == len(plan) == steps * n_out and len(order)
                                and np.array_equal(plan, np.repeat(np.arange(n_out), steps))) else None
        for a in (self.order, self.starts, self.outs, self.table, self.fill):
            if a is not None:
                a.setflags(write=False)


def reducer(scalar: str, op: str) -> tuple[Any, Any, np.dtype]:
    """(operator, identity, number dtype) of the reduce op `op` on `scalar`."""
    fn, identity = (REDUCE_I32 if scalar == "i32" else REDUCE_F32)[op]
    return fn, identity, np.dtype(np.int32 if scalar == "i32" else np.float32)


def f32_keys(x: np.ndarray) -> np.ndarray:
    """int32 keys of float32 values, increasing in the order -inf < ... < -0.0 < +0.0 < ... <
    +inf: a negative value's magnitude bits flipped (a NaN gets a key too, which the caller
    replaces). Its own inverse on the bits: `f32_of_keys`."""
    bits = np.asarray(x, np.float32).view(np.int32)
    return bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))


def f32_of_keys(keys: np.ndarray) -> np.ndarray:
    """The float32 values of `f32_keys` (the inverse, bit for bit)."""
    keys = np.asarray(keys, np.int32)
    return (keys ^ ((keys >> 31) & np.int32(0x7FFFFFFF))).view(np.float32)


def _f32_key_values(op: str, v: np.ndarray, take: np.ndarray | None) -> tuple[np.ndarray, np.int32]:
    """The keys of `v` with every NaN (and every cell not in `take`) as the identity's key."""
    ident = np.int32(f32_keys(np.array(-np.inf if op == "MAX" else np.inf, np.float32)))
    skip = np.isnan(v)
    if take is not None:
        skip |= ~take
    return np.where(skip, ident, f32_keys(v)), ident


def _runs(v: np.ndarray, g: Groups, ufunc: np.ufunc, lanes: bool) -> np.ndarray:
    """`ufunc` reduced over each group's run of positions (and its lanes: `lanes`) of the
    (..., N, P) array `v`: (..., groups, P), or (..., groups, 1) with `lanes`."""
    lead, p, n = v.shape[:-2], v.shape[-1], len(g.starts)
    if g.blocks is not None:
        if lanes:
            return ufunc.reduce(v.reshape(*lead, n, g.blocks * p), axis=-1)[..., None]
        return ufunc.reduce(v.reshape(*lead, n, g.blocks, p), axis=-2)
    v = np.take(v, g.order, axis=-2)
    if lanes:
        return ufunc.reduceat(v.reshape(*lead, -1), g.starts * p, axis=-1)[..., None]
    return ufunc.reduceat(v, g.starts, axis=-2)


def _order_free(scalar: str, op: str, v: np.ndarray, take: np.ndarray | None, g: Groups, identity: Any,
                dtype: np.dtype, lanes: bool) -> np.ndarray:
    """The fold of every non-empty group of an order-free op: (..., groups, P), or over the
    lanes too (`lanes`): (..., groups, 1)."""
    ufunc = np.maximum if op == "MAX" else np.minimum if op == "MIN" else np.add
    if scalar == "f32":
        keys, _ = _f32_key_values(op, v, take)
        return f32_of_keys(_runs(keys, g, ufunc, lanes))
    if op == "ADD":
        wide = v.astype(np.int64)
        if take is not None:
            wide = np.where(take, wide, 0)
        total = _runs(wide, g, np.add, lanes)
        return (total & np.int64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    if take is not None:
        v = np.where(take, v, np.asarray(identity, dtype))
    return _runs(v, g, ufunc, lanes).astype(dtype, copy=False)


def _steps_of(a: np.ndarray, g: Groups) -> np.ndarray:
    """(..., N, P) -> (..., steps, groups, P): the k-th position of every group at step k."""
    if g.blocks is not None:
        return np.moveaxis(a.reshape(*a.shape[:-2], len(g.starts), g.blocks, a.shape[-1]), -2, -3)
    return np.take(a, g.table, axis=-2)


def _in_steps(scalar: str, op: str, values: np.ndarray, take: np.ndarray | None, g: Groups,
              identity: Any, dtype: np.dtype) -> np.ndarray:
    """The fold of every non-empty group as array steps, step k the k-th position of each."""
    fn, _, _ = reducer(scalar, op)
    raw = _RAW_F32.get(op) if scalar == "f32" else None
    steps = _steps_of(values, g)
    mask = None if take is None else _steps_of(np.broadcast_to(take, values.shape), g)
    if g.fill is not None:
        fill = g.fill[..., None]
        mask = np.broadcast_to(fill, steps.shape) if mask is None else mask & fill
    acc = np.full(steps.shape[:-3] + steps.shape[-2:], identity, dtype)
    with np.errstate(all="ignore"):
        for k in range(steps.shape[-3]):
            v = steps[..., k, :, :]
            new = raw(acc, v, dtype=np.float32) if raw is not None else fn(acc, v)
            acc = new if mask is None else np.where(mask[..., k, :, :], new, acc)
    return canonical_nan(acc) if raw is not None else acc


def _placed(folded: np.ndarray, g: Groups, identity: Any, dtype: np.dtype) -> np.ndarray:
    """The folds of the non-empty groups at their outputs; the others the identity."""
    if len(g.outs) == g.n_out and (g.blocks is not None or np.array_equal(g.outs, np.arange(g.n_out))):
        return folded
    out = np.full(folded.shape[:-2] + (g.n_out, folded.shape[-1]), identity, dtype)
    out[..., g.outs, :] = folded
    return out


def fold(scalar: str, op: str, values: np.ndarray, groups: Groups, take: np.ndarray | None = None) -> np.ndarray:
    """Fold `values` (..., N, P) of `scalar` (int32 / float32 numbers) into (..., n_out, P) by
    `groups` (the N positions' outputs), lane by lane; `take` (broadcastable to `values`)
    marks the cells folded. An output without positions is the identity."""
    _, identity, dtype = reducer(scalar, op)
    values = np.asarray(values, dtype)
    if not len(groups.order):
        return np.full(values.shape[:-2] + (groups.n_out, values.shape[-1]), identity, dtype)
    if op in ORDER_FREE[scalar]:
        t = None if take is None else np.broadcast_to(take, values.shape)
        folded = _order_free(scalar, op, values, t, groups, identity, dtype, lanes=False)
    else:
        folded = _in_steps(scalar, op, values, take, groups, identity, dtype)
    return _placed(folded, groups, identity, dtype)


def fold_flits(scalar: str, op: str, values: np.ndarray, groups: Groups, live: np.ndarray | None,
               counted: bool = False) -> np.ndarray:
    """The reduced packet's fold: every flit of `values` (..., N, 4) collapsed as the tree
    `op(op(a, b), op(c, d))`, its lanes not `live` (broadcastable to `values`; None: all
    live) as the identity, then the flits folded by `groups`: (..., n_out, 1). `counted`: a flit with
    no live lane leaves its accumulator as it is (else it folds its tree of identities)."""
    _, identity, dtype = reducer(scalar, op)
    values = np.asarray(values, dtype)
    if live is not None:
        live = None if np.all(live) else np.broadcast_to(live, values.shape)
    if not len(groups.order):
        return np.full(values.shape[:-2] + (groups.n_out, 1), identity, dtype)
    if op in ORDER_FREE[scalar]:  # the tree is the fold of the live lanes: fold them all at once
        return _placed(_order_free(scalar, op, values, live, groups, identity, dtype, lanes=True),
                       groups, identity, dtype)
    flits = tree(scalar, op, values, live)
    take = live.any(-1)[..., None] if counted and live is not None else None
    return _placed(_in_steps(scalar, op, flits, take, groups, identity, dtype), groups, identity, dtype)


def tree(scalar: str, op: str, values: np.ndarray, live: np.ndarray | None = None) -> np.ndarray:
    """A reduced packet's flits (..., 4) collapsed as `op(op(a, b), op(c, d))`, the lanes not
    `live` as the identity: (..., 1). f32 `ADD` / `MUL` leave NaNs as the host makes them
    (the fold after the tree canonicalises; see the module docstring)."""
    fn, identity, dtype = reducer(scalar, op)
    lanes = np.asarray(values, dtype)
    if live is not None:
        lanes = np.where(live, lanes, np.asarray(identity, dtype))
    if scalar == "f32" and op in _RAW_F32:
        raw = _RAW_F32[op]
        fn = lambda a, b: raw(a, b, dtype=np.float32)  # noqa: E731
    with np.errstate(all="ignore"):
        return fn(fn(lanes[..., 0], lanes[..., 1]), fn(lanes[..., 2], lanes[..., 3]))[..., None]
