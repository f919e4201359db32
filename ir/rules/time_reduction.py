"""The Time Reducer of `contract_time` (docs/machine/contraction.md), shared by rules, lowering and cpu.

`time_reduction(pre_time, out_time)` lays the kept and summed factors of the stream's time
out as loops, outer to inner, with their strides, and counts IT, the kept slots inside the
outermost summed loop (docs/machine/contraction.md). It works on factor forms and raises ValueError
where the reduction is undefined.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from ir.errors import MappingError
from ir.mapping import ops as mops
from ir.mapping.factors import AxisFactor, Factor, RaggedFactor, same_kind, split_factor
from ir.mapping.nodes import Mapping
from ir.memo import memo

__all__ = ["TimeLoopGeometry", "TimeReduction", "ordered_reduction", "inner_time", "time_reduction"]


@attrs.frozen
class TimeLoopGeometry:
    """One loop of the Time Reducer, outer to inner over a refinement of the pre-reduce
    time: kept loops carry their cell stride in out_time, reduced loops None."""

    size: int
    keep: bool
    stride_t: int
    stride_ot: int | None
    factor: Factor

    @property
    def kind(self) -> str:
        return "KEEP" if self.keep else "REDUCE"

    def __str__(self) -> str:
        return f"{self.size} {self.kind}"


@attrs.frozen
class TimeReduction:
    """`contract_time` as the TimeReduce op sees it: loops outer to inner and IT (slots)."""

    loops: tuple[TimeLoopGeometry, ...]
    inner_time: int

    @property
    def entries(self) -> tuple[tuple[int, str], ...]:
        """(size, KEEP|REDUCE) per loop, outer to inner (TimeReduce.loops)."""
        return tuple((lp.size, lp.kind) for lp in self.loops)

    @property
    def reduced(self) -> tuple[TimeLoopGeometry, ...]:
        return tuple(lp for lp in self.loops if not lp.keep)

    @property
    def slots(self) -> int:
        return self.inner_time


def ordered_reduction(pre: Sequence[Factor], out: Sequence[Factor]) -> tuple[TimeLoopGeometry, ...] | None:
    """Keep the factors of `out` as an in-order sub-list of a refinement of `pre`, the rest
    reduced; None when no such refinement exists.

    Both lists are first cut to a common refinement. AxisFactor and RaggedFactor factors match identical
    factors of `pre`; a BroadcastFactor or PaddingFactor takes same-kind extent from `pre` factors at or after the
    cursor (outer first). A partly kept BroadcastFactor/PaddingFactor factor of `pre` is refined into its kept
    parts, outer first, and the reduced rest, innermost."""
    pair = mops.common_refinement(tuple(pre), tuple(out))
    if pair is None:
        return None
    rm, rn = pair
    sn = mops.strides(rn)
    parts: list[list[tuple[int, int]]] = [[] for _ in rm]  # kept (extent, stride in out)
    used = [1] * len(rm)
    cursor = 0
    for j, g in enumerate(rn):
        if isinstance(g, (AxisFactor, RaggedFactor)):
            k = next((k for k in range(cursor, len(rm)) if not parts[k] and rm[k] == g), None)
            if k is None:
                return None
            parts[k].append((g.extent, sn[j]))
            used[k] = g.extent
            cursor = k + 1
            continue
        need, taken = g.extent, []
        k = cursor
        while need > 1:
            while k < len(rm) and not (same_kind(rm[k], g) and math.gcd(need, rm[k].extent // used[k]) > 1):
                k += 1
            if k == len(rm):
                return None
            t = math.gcd(need, rm[k].extent // used[k])
            taken.append((k, t))
            used[k] *= t
            need //= t
        inner = 1
        for k2, t in reversed(taken):  # the first part taken is the outermost of g
            parts[k2].append((t, sn[j] * inner))
            inner *= t
        cursor = k
    return _loops(rm, parts, used)


def _loops(rm: tuple[Factor, ...], parts: list[list[tuple[int, int]]], used: list[int]) -> tuple[TimeLoopGeometry, ...]:
    sm = mops.strides(rm)
    loops: list[TimeLoopGeometry] = []
    for k, f in enumerate(rm):
        if isinstance(f, (AxisFactor, RaggedFactor)):
            kept = parts[k][0][1] if parts[k] else None
            loops.append(TimeLoopGeometry(f.extent, kept is not None, sm[k], kept, f))
            continue
        rest = f.extent // used[k]
        pieces = [(t, s) for t, s in parts[k]] + ([(rest, None)] if rest > 1 else [])
        stride = sm[k] * math.prod(t for t, _ in pieces)
        for t, s in pieces:
            stride //= t
            loops.append(TimeLoopGeometry(t, s is not None, stride, s, split_factor(f, t)[1]))
    return tuple(loops)


def inner_time(loops: Sequence[TimeLoopGeometry]) -> int:
    """IT (docs/machine/contraction.md): product of the kept loop sizes inner to the outermost reduced
    loop; 1 when nothing is reduced or nothing is kept inside it."""
    first = next((i for i, lp in enumerate(loops) if not lp.keep), None)
    if first is None:
        return 1
    return math.prod(lp.size for lp in loops[first + 1:] if lp.keep)


@memo()
def time_reduction(pre_time: Mapping, out_time: Mapping) -> TimeReduction:
    """The Time Reducer of `contract_time(out_time)` on a stream of time `pre_time`
    (docs/machine/contraction.md): loops outer to inner with KEEP/REDUCE and strides, and IT.
    ValueError when out_time is not an in-order sub-list of pre_time's factors."""
    try:
        loops = ordered_reduction(pre_time.factors(), out_time.factors())
    except MappingError as e:
        raise ValueError(f"time `{out_time}` is not a reduction of `{pre_time}`: {e}") from e
    if loops is None:
        raise ValueError(f"time `{out_time}` is not an in-order sub-list of the factors of `{pre_time}`")
    return TimeReduction(loops, inner_time(loops))
