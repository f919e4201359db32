"""The naive model's pair mode, comparison tags and branched operands: element by element in
Python numbers, sharing no code with `ir.vector` (guards are read from their BitReq
pattern, comparisons from their enum names). Only what the shipped examples use is
modelled; anything else raises ModelError."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.differential.naive_layout import ModelError, Value, index_of, move
from tests.differential.naive_vector import _f32, _round_f32 as _round

__all__ = ["begin_interleaved", "pair_stage"]


def begin_interleaved(lhs: Value, rhs: Value, axis: Any) -> Value:
    """Each slice's element of `lhs`, then of `rhs`: the element `axis, element`."""
    rows = int(np.prod([m.size for m in lhs.levels[:3]]))
    data = np.concatenate([lhs.data.reshape(rows, -1), rhs.data.reshape(rows, -1)], axis=1).reshape(-1)
    return Value(lhs.dtype, lhs.levels[:3] + (_one(), axis.pair(lhs.levels[3])), data, 3)


def _one() -> Any:
    from ir.mapping.nodes import Broadcast

    return Broadcast(1)


def _group(v: Value, levels: tuple, axis: str, g: int) -> Value:
    """The stream at `axis` = g over `levels` (the time without the axis)."""
    src_live, src_c = index_of(v.levels)
    out_live, out_c = index_of(levels)
    names = sorted(a for a in out_c)
    where = {}
    for pos in np.flatnonzero(src_live):
        if int(src_c[axis].reshape(-1)[pos]) == g:
            where[tuple(int(src_c[a].reshape(-1)[pos]) if a in src_c else 0 for a in names)] = pos
    data = np.zeros(out_live.size, v.data.dtype)
    flat = v.data.reshape(-1)
    for pos in np.flatnonzero(out_live):
        key = tuple(int(out_c[a].reshape(-1)[pos]) for a in names)
        if key not in where:
            raise ModelError(f"no element of group {g} at {key}")
        data[pos] = flat[where[key]]
    return Value(v.dtype, levels, data, 3)


def _holds(name: str, bound: Any, x: int, dtype: str) -> bool:
    if name in ("TRUE", "FALSE"):
        return name == "TRUE"
    if name in ("LESS_UNSIGNED", "GREATER_UNSIGNED"):
        ux, ub = x & 0xFFFFFFFF, (_round(float(bound)) if dtype == "f32" else int(bound)) & 0xFFFFFFFF
        return ux < ub if name == "LESS_UNSIGNED" else ux > ub
    a, b = (_f32(x), float(bound)) if dtype == "f32" else (int(x), int(bound))
    if name == "EQUAL":
        return a == b
    return a < b if name == "LESS" else a > b


def _ids(v: Value, mode: Any) -> list[int]:
    cmps = list(mode.values[0]) if mode.values else []
    out = []
    for x in v.data.reshape(-1).tolist():
        out.append(sum(1 << i for i, c in enumerate(cmps) if _holds(c.name, c.values[0] if c.values else 0, x, v.dtype)))
    return out


def _admits(guard: Any, e: int) -> bool:
    ok = all(b.name == "IGNORE" or ((e >> i) & 1) == (b.name == "ONE") for i, b in enumerate(guard.bits))
    return ok != guard.negated


def _binary(name: str, a: int, b: Any, dtype: str) -> int:
    if dtype == "f32" and name in ("ADD", "ADD_F"):
        return _round(_f32(a) + _f32(b))
    if dtype == "f32" and name == "MUL_F":
        return _round(_f32(a) * _f32(b))
    raise ModelError(f"the naive model has no pair or branched op {name} on {dtype}")


def pair_stage(name: str, op: Any, env: dict, v: Any) -> Any:
    """The value after a pair, tag or branched stage (None: not one of these)."""
    if name == "vector_intra_slice_unzip":
        levels = v.levels[:3] + (op.split_time, v.levels[4])
        return tuple(_group(v, levels, op.axis.name, g) for g in (0, 1))
    if name == "vector_clip_zip":
        g0, g1 = v
        if op.mode is not None and op.mode.name != "MODE01":  # MODE01, op(group0, group1), is the default
            raise ModelError("the naive model has no zip modes")
        data = np.array([_binary(op.op.name, a, b, g0.dtype) for a, b in zip(g0.data.tolist(), g1.data.tolist())],
                        g0.data.dtype)
        return Value(g0.dtype, g0.levels, data, 3)
    if name == "vector_fp_binary" and hasattr(op, "operand"):
        return _branched(op, env, v)
    return None  # a single-stream stage: naive_vector models it


def _branched(op: Any, env: dict, v: Value) -> Value:
    tagged = env[op.tagged.id]
    ids = _ids(tagged, env["mode", op.tagged.id])
    if tagged.levels != v.levels:  # trimmed: each 8-cell flit keeps its front four cells
        width = v.levels[4].size
        ids = [e for k, e in enumerate(ids) if k % tagged.levels[4].size < width]
    slots = [(g, _round(float(c.value)) if v.dtype == "f32" else int(c.value)) for g, c in op.operand.slots()]
    out = []
    for x, e in zip(v.data.reshape(-1).tolist(), ids):
        hit = next((val for g, val in slots if _admits(g, e)), None)
        out.append(x if hit is None else _binary(op.op.name, x, hit, v.dtype))
    return Value(v.dtype, v.levels, np.array(out, v.data.dtype).reshape(v.data.shape), v.spatial)
