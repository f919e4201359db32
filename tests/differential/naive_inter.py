"""The inter-slice reducer in the naive model: `vector_inter_slice_reduce(out_slice, out_time, op)`.

Per (chip, cluster) and packet lane, each live position of `[out_slice, out_time]` takes
the fold, from the op's identity, of every live input position of `[slice, time]` whose
coordinates agree on the axes both sides hold (read through the output's digits), in
input position order; axes only the output holds are a broadcast, padding is zero. The
element ops are the naive vector model's own (naive_vector.py), one Python scalar at a time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.mapping.nodes import Pair
from tests.differential.naive_layout import ModelError, Value, digits, level_cells, restrict
from tests.differential.naive_vector import _bits, _clip_f32, _clip_i32, _f32, _fp

__all__ = ["inter_reduce"]

_I32 = {"ADD": ("ADD_FXP", 0), "ADD_SAT": ("ADD_FXP_SAT", 0), "MAX": ("MAX", -(2**31)), "MIN": ("MIN", 2**31 - 1)}
_F32 = {"ADD": float("0.0"), "MUL": 1.0, "MAX": float("-inf"), "MIN": float("inf")}


def _combine(dtype: str, name: str):
    """(fold step on stored scalars, stored identity) of op `name`."""
    if dtype == "i32":
        fn, ident = _I32[name]
        return (lambda a, b: _clip_i32(fn, a, b)), ident
    if name in ("ADD", "MUL"):
        return (lambda a, b: _fp("ADD" if name == "ADD" else "MUL_F", _f32(a), _f32(b))), _bits(_F32[name])
    return (lambda a, b: _clip_f32(name, _f32(a), _f32(b))), _bits(_F32[name])


def _keys(m: Any, axes: list[str], held: dict) -> tuple[np.ndarray, list[tuple]]:
    live, coords = level_cells(m)
    kept = restrict(coords, {a: held[a] for a in axes}, m.size)
    return live, [tuple(int(kept[a][i]) for a in axes) for i in range(m.size)]


def inter_reduce(v: Value, op: Any) -> Value:
    chip, cluster, slice_, time, packet = v.levels
    src, dst = Pair(slice_, time), Pair(op.out_slice, op.out_time)
    held, have = digits(dst), digits(src)
    axes = sorted(a for a in held if a in have)
    s_live, s_key = _keys(src, axes, held)
    d_live, d_key = _keys(dst, axes, held)
    fn, ident = _combine(v.dtype, op.op.name)
    rows = v.data.reshape(chip.size * cluster.size, src.size, packet.size).tolist()
    out = np.zeros((len(rows), dst.size, packet.size), dtype=v.data.dtype)
    groups: dict[tuple, list[int]] = {}
    for i in np.flatnonzero(s_live):
        groups.setdefault(s_key[i], []).append(int(i))
    for o in np.flatnonzero(d_live):
        members = groups.get(d_key[o])
        if members is None:
            raise ModelError(f"output position {o} of {dst} has no input in {src}")
        for r, row in enumerate(rows):
            for lane in range(packet.size):
                acc = ident
                for i in members:
                    acc = fn(acc, row[i][lane])
                out[r, o, lane] = acc
    return Value(v.dtype, (chip, cluster, op.out_slice, op.out_time, packet), out.reshape(-1), 3)
