"""Mapping operations of docs/machine/index.md: split, strip, fragments, refinement, divide.

Everything here works on canonical factor lists (`Mapping.factors()`, docs/mapping-language.md) and
never tabulates cells, so it stays cheap for mappings with millions of cells. The digit
ranges ("fragments") live in `ir.mapping.ranges` (re-exported here), the sequencer matcher
and the DMA burst in `ir.mapping.sequence`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs

from ir.errors import MappingError
from ir.mapping.factors import AxisFactor, Factor, PaddingFactor, RaggedFactor, factor_size, same_kind, split_factor
from ir.mapping.nodes import IDENTITY, Mapping, Modulo, Stride
from ir.mapping.ranges import (
    DigitRange, FactorsLike, aligned_frag, as_factors, axes_of, disjoint, factor_frags, frag, hull, inside, merge_frags,
    places_digit_twice, ragged_run, relation,
)

__all__ = [
    "DigitRange", "Entry", "Loop", "DivideResult", "FactorsLike", "as_factors",
    "split", "split_factors", "strip_factors",
    "frag", "axes_of", "factor_frags", "aligned_frag", "ragged_run", "hull", "merge_frags", "relation", "inside",
    "disjoint", "cut", "boundary_points",
    "strides", "refine", "common_refinement", "divide", "coalesce", "places_digit_twice",
]

# --- split, strip -----------------------------------------------------------------------


def split(mapping: Mapping, n: int) -> tuple[Mapping, Mapping]:
    """`(M / n, M % n)` = (outer, inner); `[outer, inner] ≡ M`. The trivial splits return
    `(M, 1)` and `(1, M)` (equivalent, smaller trees). MappingError unless n | size(M)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise MappingError("zero_divisor", f"cannot split `{mapping}` by {n!r}")
    if mapping.size % n:
        raise MappingError("stride_not_divisible",
                           f"split of `{mapping}` by {n}: {n} does not divide {mapping.size}")
    if n == 1:
        return mapping, IDENTITY
    if n == mapping.size:
        return IDENTITY, mapping
    return Stride(mapping, n), Modulo(mapping, n)


def split_factors(factors: FactorsLike, n: int) -> tuple[tuple[Factor, ...], tuple[Factor, ...]] | None:
    """split(M, n) on a factor list: (outer, inner) factor lists, or None when the cut at
    cell stride n falls inside a ragged piece or not on a refinement boundary (then use
    `split` on the mapping). MappingError unless n divides the size."""
    fs = as_factors(factors)
    if n < 1 or factor_size(fs) % n:
        raise MappingError("stride_not_divisible", f"split by {n}: {n} does not divide {factor_size(fs)}")
    c, i = 1, len(fs)
    while c < n:
        f = fs[i - 1]
        if n % (c * f.extent) == 0:
            c, i = c * f.extent, i - 1
            continue
        t = n // c
        parts = None if n % c or f.extent % t else split_factor(f, t)
        if parts is None:
            return None
        return fs[:i - 1] + (parts[0],), (parts[1],) + fs[i:]
    return fs[:i], fs[i:]


def strip_factors(factors: FactorsLike) -> tuple[Factor, ...]:
    """The factor list without its leading (outermost) `PaddingFactor` factors."""
    fs = as_factors(factors)
    i = 0
    while i < len(fs) and isinstance(fs[i], PaddingFactor):
        i += 1
    return fs[i:]


# --- refinement --------------------------------------------------------------------------


def strides(factors: FactorsLike) -> tuple[int, ...]:
    """Cell stride of each factor: the product of the extents of the factors inside it."""
    fs = as_factors(factors)
    out, c = [0] * len(fs), 1
    for i in range(len(fs) - 1, -1, -1):
        out[i] = c
        c *= fs[i].extent
    return tuple(out)


def cut(fr: DigitRange, points: Iterable[int]) -> tuple[DigitRange, ...] | None:
    """The pieces of `fr` cut at every point strictly inside it, outer (high) first; None
    when the points and the ends do not form a divisor chain `lo | t1 | ... | hi`."""
    inside = sorted({t for t in points if fr.lo < t < fr.hi})
    bounds = [fr.lo, *inside, fr.hi]
    if any(b % a for a, b in zip(bounds, bounds[1:])):
        return None
    return tuple(DigitRange(fr.axis, a, b) for a, b in reversed(list(zip(bounds, bounds[1:]))))


def boundary_points(factors: Iterable[Factor]) -> dict[str, set[int]]:
    """Per axis, the ends of every aligned live fragment (AxisFactor digit ranges, `X # p` runs)."""
    out: dict[str, set[int]] = {}
    for f in factors:
        fr = aligned_frag(f)
        if fr is not None:
            out.setdefault(fr.axis, set()).update((fr.lo, fr.hi))
    return out


def refine(factors: FactorsLike, other: FactorsLike) -> tuple[Factor, ...] | None:
    """`factors` with every `AxisFactor` cut at the fragment ends of `other` on the same axis;
    None when a cut breaks the divisor chain (no common refinement). BroadcastFactor,
    PaddingFactor and RaggedFactor stay whole (a RaggedFactor is never refined; matching decides about it)."""
    points = boundary_points(as_factors(other))
    out: list[Factor] = []
    for f in as_factors(factors):
        if not isinstance(f, AxisFactor):
            out.append(f)
            continue
        pieces = cut(factor_frags(f)[0], points.get(f.axis, ()))
        if pieces is None:
            return None
        out.extend(AxisFactor(f.axis, p.lo, p.extent, f.axis_size) for p in pieces)
    return tuple(out)


def common_refinement(fa: FactorsLike,
                      fb: FactorsLike) -> tuple[tuple[Factor, ...], tuple[Factor, ...]] | None:
    """Refinements of both lists in which every AxisFactor fragment of one equals or is disjoint
    from every AxisFactor fragment of the other; None when none exists (`A % 5, A / 5` against
    `A % 3, A / 3`)."""
    ra, rb = refine(fa, fb), refine(fb, fa)
    if ra is None or rb is None:
        return None
    return ra, rb


# --- divide ------------------------------------------------------------------------------


@attrs.frozen
class Loop:
    """One factor of M's refinement in `divide(M, N)`: its cell stride in M, and its cell
    stride in N when N matched it (None: a quotient factor)."""

    factor: Factor
    stride_m: int
    stride_n: int | None

    @property
    def kept(self) -> bool:
        return self.stride_n is not None


@attrs.frozen
class DivideResult:
    """A successful `divide(M, N)`: M's refinement outer to inner as `loops`; the matched
    factors carry strides in M and N, the rest is the quotient (in M's order)."""

    loops: tuple[Loop, ...]

    @property
    def matched(self) -> tuple[Loop, ...]:
        return tuple(lp for lp in self.loops if lp.kept)

    @property
    def quotient(self) -> tuple[Factor, ...]:
        return tuple(lp.factor for lp in self.loops if not lp.kept)


def divide(m: FactorsLike, n: FactorsLike) -> DivideResult | None:
    """divide(M, N): match every factor of a refinement of N with a factor of a refinement
    of M (same axis and digits for AxisFactor, identical table for RaggedFactor, same kind
    for BroadcastFactor/PaddingFactor, whose extents may be split), in any order; None when some factor of N has no match."""
    pair = common_refinement(m, n)
    if pair is None:
        return None
    rm, rn = pair
    sm, sn = strides(rm), strides(rn)
    kept: list[int | None] = [None] * len(rm)  # stride in N of a matched AxisFactor/RaggedFactor
    used = [1] * len(rm)  # BroadcastFactor/PaddingFactor: extent consumed from the inner side so far
    parts: list[list[Loop]] = [[] for _ in rm]  # BroadcastFactor/PaddingFactor: matched parts, inner first
    for j in range(len(rn) - 1, -1, -1):  # inner first, so BroadcastFactor/PaddingFactor parts stack up inner first
        g = rn[j]
        if isinstance(g, (AxisFactor, RaggedFactor)):
            i = next((i for i, f in enumerate(rm) if kept[i] is None and f == g), None)
            if i is None:
                return None
            kept[i] = sn[j]
            continue
        # BroadcastFactor/PaddingFactor: refine g across M's factors of its kind, taking the shared part of each
        # (cells of BroadcastFactor(a*b) and BroadcastFactor(a), BroadcastFactor(b) agree, so
        # any split works; greedy never wastes)
        rest, stride_n = g.extent, sn[j]
        for i in range(len(rm) - 1, -1, -1):
            take = math.gcd(rest, rm[i].extent // used[i]) if same_kind(rm[i], g) else 1
            if take > 1:
                parts[i].append(Loop(split_factor(g, take)[1], sm[i] * used[i], stride_n))
                used[i], rest, stride_n = used[i] * take, rest // take, stride_n * take
        if rest > 1:
            return None
    loops: list[Loop] = []
    for i, f in enumerate(rm):
        if isinstance(f, (AxisFactor, RaggedFactor)):
            loops.append(Loop(f, sm[i], kept[i]))
            continue
        rest = f.extent // used[i]
        if rest > 1:
            loops.append(Loop(split_factor(f, rest)[1], sm[i] * used[i], None))
        loops.extend(reversed(parts[i]))
    return DivideResult(tuple(loops))


# --- sequencer entries -------------------------------------------------------------------


@attrs.frozen
class Entry:
    """One sequencer loop: `size` iterations `stride` elements apart (0: re-read/broadcast)."""

    size: int
    stride: int

    def __str__(self) -> str:
        return f"{self.size}:{self.stride}"


def coalesce(entries: Iterable[Entry | tuple[int, int]]) -> tuple[Entry, ...]:
    """Drop size-1 entries and merge neighbours `(n1 : s1), (n2 : s2)` into
    `(n1*n2 : s2)` when `s1 == n2 * s2` (docs/machine/fetch.md)."""
    out: list[Entry] = []
    for e in entries:
        e = e if isinstance(e, Entry) else Entry(*e)
        if e.size == 1:
            continue
        if out and out[-1].stride == e.size * e.stride:
            out[-1] = Entry(out[-1].size * e.size, e.stride)
            continue
        out.append(e)
    return tuple(out)

