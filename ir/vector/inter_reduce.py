"""The inter-slice reducer (`vector_inter_slice_reduce`): its shape rules and its fold.

The reducer folds a stream across the slices of a cluster. Chip, cluster and packet stay;
`[slice, time]` becomes `[out_slice, out_time]`. The factors of `slice` missing from the
output are reduced; they must be the innermost factors of `slice` (VE-INTER-3) and only
slice factors may be reduced (VE-INTER-2). The kept slice factors stay outermost in
`out_slice`, in order (VE-INTER-4); the slots the reduced factors free are filled by
dummies (`1 # n`), fresh axes the result is broadcast over, or factors promoted from
`time` in any order (VE-INTER-5); `out_time` is `time` without the promoted factors, in
order (VE-INTER-6). `out_slice` spans as many slices as `slice` (VE-INTER-1).

The fold, per (chip, cluster) and output cell: the input cells whose kept digits match are
folded in input order (slice-major, then time) from the op's identity,
`acc = op(acc, v)`, lane by lane (vectorised: `ir.vector.numerics.fold`); padding cells are
skipped and padding output cells are zero. A fresh axis repeats the same folded value. Both
backends call `reduce_ring`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ir.diagnostic import Violation
from ir.mapping.cells import LIVE, evaluate
from ir.mapping.factors import AxisFactor, RaggedFactor
from ir.mapping.nodes import Mapping, pair_all
from ir.mapping.ops import refine
from ir.vector.numerics.fold import Groups, fold

__all__ = ["inter_fault", "reduce_ring"]


def _refined(levels: list[Mapping]) -> list[tuple] | None:
    """Each level's factors, cut at every fragment end of all of them (None: no common cut)."""
    lists = [tuple(mp.factors()) for mp in levels]
    for _ in range(2):
        everything = [f for fs in lists for f in fs]
        cut = [refine(fs, everything) for fs in lists]
        if any(c is None for c in cut):
            return None
        lists = cut
    return lists


def _data(fs: tuple) -> list[AxisFactor]:
    return [f for f in fs if isinstance(f, AxisFactor)]


def _v(code: str, message: str, help: str) -> Violation:
    return Violation(code, message, help=help)


def _plan(slice_: Mapping, time: Mapping, out_slice: Mapping, out_time: Mapping) -> Any:
    """(slice, time, out_slice, out_time) data fragments on one common cut, then every factor of
    out_slice and of slice on it (padding and broadcasts too); or a Violation."""
    levels = [slice_, time, out_slice, out_time]
    if any(isinstance(f, RaggedFactor) for mp in levels for f in mp.factors()):
        return _v("VE-INTER-1", "the inter-slice reduce's mappings must factor into axis digits",
                  "write slice, time, out_slice and out_time from whole digit ranges")
    cut = _refined(levels)
    if cut is None:
        return _v("VE-INTER-1", f"[{slice_}, {time}] and [{out_slice}, {out_time}] have no common digit cut",
                  "write the output from the input's own digit ranges")
    return [_data(fs) for fs in cut] + [cut[2], cut[0]]


def inter_fault(slice_: Mapping, time: Mapping, out_slice: Mapping, out_time: Mapping,
                other_axes: frozenset[str] = frozenset()) -> Violation | None:
    """The first of VE-INTER-1 ... VE-INTER-6 the shapes break, or None. `other_axes` are the
    axes of the input's chip, cluster and packet (not fresh)."""
    if out_slice.size != slice_.size:
        return _v("VE-INTER-1", f"out_slice {out_slice} spans {out_slice.size} slices, the stream's slice "
                  f"{slice_} spans {slice_.size}", "fill the reduced slots with `1 # n`, a fresh axis or a time factor")
    plan = _plan(slice_, time, out_slice, out_time)
    if isinstance(plan, Violation):
        return plan
    s, t, os_, ot, os_all, s_all = plan
    out = set(os_) | set(ot)
    lost_time = [f for f in t if f not in out]
    if lost_time:
        return _v("VE-INTER-2", f"the reduce removes {lost_time[0].axis} from time: the inter-slice reducer "
                  "reduces slice digits only", "keep every time factor in out_time or promote it to out_slice")
    reduced = [i for i, f in enumerate(s) if f not in out]
    if reduced and reduced != list(range(len(s) - len(reduced), len(s))):
        return _v("VE-INTER-3", f"the reduced slice factors of {slice_} are not its innermost ones",
                  "reduce the innermost slice factors; move the reduced axis inward in the slice")
    kept = s[:len(s) - len(reduced)]
    # the kept factors keep their slice positions: out_slice starts with slice's factors up to the
    # last kept one, padding and broadcasts among them included (`1 # 4, M / 8` of `1 # 4, M / 8, K / 16`)
    prefix = list(s_all[:s_all.index(kept[-1]) + 1]) if kept else []
    if list(os_all[:len(prefix)]) != prefix:
        return _v("VE-INTER-4", f"the kept slice factors of {slice_} do not stay outermost in out_slice {out_slice}",
                  "write out_slice as the kept slice factors, then the reduced slots' replacements")
    have = {f.axis for f in s + t} | set(other_axes)
    for f in os_[len(kept):]:
        if f not in t and f.axis in have:
            return _v("VE-INTER-5", f"out_slice {out_slice} places {f.axis} in a reduced slot: a slot takes a dummy "
                      "`1 # n`, a fresh axis or a factor promoted from time",
                      "write the reduced slots with `1 # n`, an axis the stream lacks, or a time factor")
    rest = [f for f in t if f not in os_]
    if ot != rest:
        return _v("VE-INTER-6", f"out_time {out_time} is not the time {time} without its promoted factors, in order",
                  f"write out_time as {', '.join(f'{f.axis}' for f in rest) or '1'} in the order time has them")
    return None


def _groups(levels: list[Mapping], kept: list[AxisFactor]) -> np.ndarray:
    """Per flat position of `levels`, the key of its kept digits (-1: padding)."""
    mp = pair_all(levels)
    table = evaluate(mp, np.arange(mp.size))
    key = np.zeros(mp.size, np.int64)
    for f in kept:
        c = table.coords.get(f.axis)
        digit = np.zeros(mp.size, np.int64) if c is None else (np.asarray(c, np.int64) // f.step) % f.extent
        key = key * f.extent + digit
    return np.where(table.status == LIVE, key, -1)


@functools.lru_cache(maxsize=256)
def _ring_plan(slice_: Mapping, time: Mapping, out_slice: Mapping, out_time: Mapping) -> tuple[Groups, np.ndarray]:
    """The fold's groups of the input positions, and each output position's group (-1:
    padding); kept, as a traced kernel folds the same mappings every run."""
    s, t, os_, ot, _, _ = _plan(slice_, time, out_slice, out_time)
    out_frags = set(os_) | set(ot)
    kept = [f for f in s + t if f in out_frags]
    size = int(np.prod([f.extent for f in kept], dtype=np.int64))
    dst = _groups([out_slice, out_time], kept)
    dst.setflags(write=False)
    return Groups(_groups([slice_, time], kept), size), dst


def reduce_ring(scalar: str, op: str, ring: np.ndarray, slice_: Mapping, time: Mapping, out_slice: Mapping,
                out_time: Mapping) -> np.ndarray:
    """One ring's stored values (int32, or uint32 bits for f32) shaped (slice, time, P) ->
    (out_slice, out_time, P) of the same storage; padding output cells are zero."""
    groups, dst = _ring_plan(slice_, time, out_slice, out_time)
    flat = ring.reshape(slice_.size * time.size, -1)
    values = flat.view(np.float32) if scalar == "f32" else flat
    acc = fold(scalar, op, values.astype(np.float32 if scalar == "f32" else np.int32, copy=False), groups)
    out = np.zeros((len(dst), flat.shape[1]), acc.dtype)
    out[dst >= 0] = acc[dst[dst >= 0]]
    out = out.reshape(out_slice.size, out_time.size, -1)
    return out.view(np.uint32) if scalar == "f32" else out
