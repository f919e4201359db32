"""Live digit ranges of an axis (`DigitRange`) and how they relate, on canonical factor lists.

A live digit range of axis X is a `DigitRange(X, lo, hi)`: the coordinates `lo * d` for
`d < hi / lo` (`lo` divides `hi`); `AxisFactor(X, s, e)` is `DigitRange(X, s, s * e)`. Two
ranges of one axis are compared as intervals of the divisor chain: disjoint when one ends
where (or before) the other starts, "inside" when `outer.lo | inner.lo` and
`inner.hi | outer.hi` (then a refinement of the outer range has the inner one as a
factor), otherwise a partial overlap (`[1, 3)` against `[1, 5)`: 3 does not divide 5, so
no refinement aligns them). `ir.mapping.ops` re-exports all of it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Union

import attrs

from ir.mapping.cells import Index, Padding
from ir.mapping.factors import AxisFactor, Factor, RaggedFactor
from ir.mapping.nodes import Mapping

__all__ = ["DigitRange", "FactorsLike", "as_factors", "inside", "disjoint", "relation", "ragged_run", "group_run",
           "hull", "aligned_frag", "factor_frags", "merge_frags", "frag", "axes_of", "places_digit_twice"]

FactorsLike = Union[Mapping, Sequence[Factor]]


def as_factors(x: FactorsLike) -> tuple[Factor, ...]:
    """The factor list of a mapping, or the given factor list as a tuple."""
    return x.factors() if isinstance(x, Mapping) else tuple(x)


# --- digit ranges ---------------------------------------------------------------------------


@attrs.frozen(order=True)
class DigitRange:
    """A live digit range of one axis: coordinates `lo * d` for `d < hi // lo`.

    `AxisFactor(X, s, e)` covers `DigitRange(X, s, s * e)`; `J / 8 % 4` is `DigitRange("J", 8, 32)`."""

    axis: str
    lo: int
    hi: int

    @property
    def step(self) -> int:
        return self.lo

    @property
    def extent(self) -> int:
        return self.hi // self.lo

    def __str__(self) -> str:
        return f"{self.axis}[{self.lo}:{self.hi}]"


def inside(a: DigitRange, b: DigitRange) -> bool:
    """Is `a` a digit range of some refinement of `b` (`b.lo | a.lo` and `a.hi | b.hi`)?"""
    return a.axis == b.axis and a.lo % b.lo == 0 and b.hi % a.hi == 0


def disjoint(a: DigitRange, b: DigitRange) -> bool:
    """Do `a` and `b` share no digit (other axes, or ranges that do not meet)?"""
    return a.axis != b.axis or a.hi <= b.lo or b.hi <= a.lo


def inside_to_end(a: DigitRange, b: DigitRange, size: int | None) -> bool:
    """Is `a` inside `b` where both run to the end of their axis (of live size `size`)? A
    padded axis's top digit range ends at the live size in one spelling (the ragged run
    `R13[1:13]` of `R13 # 32 / 8, R13 # 32 % 8`) and at the padded size in another
    (`R13[1:16]` of `R13 # 16`): both hold every digit from their low one up, so only the
    low digits decide."""
    return (size is not None and a.axis == b.axis and a.hi >= size and b.hi >= size
            and b.lo <= a.lo and a.lo % b.lo == 0)


def relation(a: DigitRange, b: DigitRange) -> str:
    """How `a` relates to `b`: 'disjoint', 'equal', 'inside', 'contains' or 'partial'."""
    if disjoint(a, b):
        return "disjoint"
    if a == b:
        return "equal"
    if inside(a, b):
        return "inside"
    if inside(b, a):
        return "contains"
    return "partial"


def ragged_run(op: RaggedFactor) -> DigitRange | None:
    """The live fragment of a ragged piece of the form `X # p` (cells `{X: s*d}` for
    `d < L`, then only padding), or None when the piece has another shape."""
    runs = _runs(op)
    return runs[0] if runs is not None and len(runs) == 1 else None


def group_run(op: RaggedFactor) -> tuple[DigitRange, ...] | None:
    """The digit ranges, outer first, whose row-major product the live cells of a ragged piece
    enumerate before its padding (`[A3, B5] # 16`: A3 over B5, 15 live cells then one of
    padding), when there are two or more; None for any other shape (`ragged_run` reads the one
    axis `X # p`)."""
    runs = _runs(op)
    return runs if runs is not None and len(runs) >= 2 else None


def _runs(op: RaggedFactor) -> tuple[DigitRange, ...] | None:
    """The digit ranges, outer first, whose row-major product the live cells of a ragged piece
    enumerate before its padding (one or more), or None for any other shape."""
    cells = op.cells
    live = 0
    while live < len(cells) and isinstance(cells[live], Index):
        live += 1
    if live < 2 or any(not isinstance(c, Padding) for c in cells[live:]) or len(cells[0]):
        return None
    ranges: list[DigitRange] = []  # inner first
    period = 1
    while period < live:
        first = cells[period]
        if len(first) != 1:
            return None
        (axis,) = first
        step, count = first[axis], 1
        while count * period < live and cells[count * period] == Index({axis: step * count}):
            count += 1
        ranges.append(DigitRange(axis, step, step * count))
        period *= count
    if period != live:
        return None
    for d in range(live) if len(ranges) > 1 else ():  # one range: every cell was compared above
        want: dict[str, int] = {}
        rest = d
        for r in ranges:
            rest, v = divmod(rest, r.hi // r.lo)
            if v:
                want[r.axis] = want.get(r.axis, 0) + v * r.lo
        if cells[d] != Index(want):
            return None
    return tuple(reversed(ranges))


def hull(op: RaggedFactor) -> tuple[DigitRange, ...]:
    """Per axis, the smallest digit range holding every coordinate of an irregular piece
    (a conservative stand-in: it is only used to detect overlaps)."""
    values: dict[str, list[int]] = {}
    for c in op.cells:
        if isinstance(c, Index):
            for axis in c:
                values.setdefault(axis, []).append(c[axis])
    out = []
    for axis, vals in sorted(values.items()):
        g = math.gcd(*vals)
        out.append(DigitRange(axis, g, g * (max(vals) // g + 1)))
    return tuple(out)


def aligned_frag(f: Factor) -> DigitRange | None:
    """The one digit range a factor places in order: an `AxisFactor`'s, or the live run of an
    `X # p` piece; None for padding, a broadcast and an irregular ragged piece."""
    if isinstance(f, AxisFactor):
        return DigitRange(f.axis, f.step, f.step * f.extent)
    return ragged_run(f) if isinstance(f, RaggedFactor) else None


def factor_frags(f: Factor) -> tuple[DigitRange, ...]:
    """The live fragments of one factor: its digit range for `AxisFactor`, the live run (or the
    conservative hull) of an `RaggedFactor`, nothing for `BroadcastFactor` and `PaddingFactor`."""
    if isinstance(f, AxisFactor):
        return (DigitRange(f.axis, f.step, f.step * f.extent),)
    if isinstance(f, RaggedFactor):
        run = ragged_run(f)
        return (run,) if run is not None else hull(f)
    return ()


def merge_frags(frags: Iterable[DigitRange]) -> tuple[DigitRange, ...]:
    """Sorted union of fragments: ranges that abut (`[1, 8)`, `[8, 32)`) merge, ranges
    inside another vanish; partly overlapping ranges stay separate."""
    out: list[DigitRange] = []
    for f in sorted(frags, key=lambda f: (f.axis, f.lo, -f.hi)):
        last = out[-1] if out else None
        if last is not None and inside(f, last):
            continue
        if last is not None and last.axis == f.axis and last.hi == f.lo:
            out[-1] = DigitRange(f.axis, last.lo, f.hi)
            continue
        out.append(f)
    return tuple(out)


def frag(mapping: FactorsLike) -> frozenset[DigitRange]:
    """frag(M): the axis digits covered by the live fragments of M, merged per axis."""
    return frozenset(merge_frags(f for x in as_factors(mapping) for f in factor_frags(x)))


def axes_of(mapping: FactorsLike) -> frozenset[str]:
    """axes(M): the axes with at least one live fragment in M."""
    return frozenset(f.axis for f in frag(mapping))


def places_digit_twice(*mappings: FactorsLike) -> tuple[DigitRange, DigitRange] | None:
    """The first two overlapping live fragments of one axis in the joint mapping
    `[M1, M2, ...]` (FETCH-7, COLLECT-5, OUTER-10, COMMIT-7, DMA-4), or None.

    Any interval overlap counts, aligned or not: a layout that mixes unaligned digit
    ranges of one axis is refused rather than decoded."""
    by_axis: dict[str, list[DigitRange]] = {}
    for mp in mappings:
        for x in as_factors(mp):
            for f in factor_frags(x):
                by_axis.setdefault(f.axis, []).append(f)
    for axis in sorted(by_axis):
        frags = sorted(by_axis[axis], key=lambda f: (f.lo, f.hi))
        widest = frags[0]
        for f in frags[1:]:
            if f.lo < widest.hi:
                return widest, f
            widest = f if f.hi > widest.hi else widest
    return None
