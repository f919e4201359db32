"""Mapping operations of docs/machine/index.md: split, pad, resize, strip, fragments, refinement, divide.

Everything here works on canonical factor lists (`Mapping.factors()`, docs/mapping-language.md) and
never tabulates cells, so it stays cheap for mappings with millions of cells. The
sequencer matcher and the DMA burst live in `ir.mapping.sequence` (re-exported below).

Fragments. A live digit range of axis X is a `Frag(X, lo, hi)`: the coordinates `lo * d`
for `d < hi / lo` (`lo` divides `hi`); `Ax(X, s, e)` is `Frag(X, s, s * e)`. Two ranges of
one axis are compared as intervals of the divisor chain: disjoint when one ends where (or
before) the other starts, "inside" when `outer.lo | inner.lo` and `inner.hi | outer.hi` (then
a refinement of the outer range has the inner one as a factor), otherwise a partial
overlap (`[1, 3)` against `[1, 5)`: 3 does not divide 5, so no refinement aligns them).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable, Sequence
from typing import Union

import attrs

from ir.errors import MappingError
from ir.mapping.cells import Index, Padding
from ir.mapping.factors import Ax, Bc, Factor, Op, Pu, factor_size
from ir.mapping.nodes import IDENTITY, Mapping, Modulo, Pad, PaddingKind, Resize, Stride

__all__ = [
    "Frag", "Entry", "Loop", "DivideResult", "FactorsLike", "as_factors",
    "split", "split_factors", "pad", "resize", "strip", "strip_factors",
    "frag", "axes_of", "factor_frags", "ragged_run", "hull", "merge_frags", "relation", "inside",
    "disjoint", "cut", "boundary_points",
    "strides", "refine", "common_refinement", "divide", "coalesce", "places_digit_twice",
    "sequence", "burst", "SequenceResult", "SequenceFailure",
]

FactorsLike = Union[Mapping, Sequence[Factor]]


def as_factors(x: FactorsLike) -> tuple[Factor, ...]:
    """The factor list of a mapping, or the given factor list as a tuple."""
    return x.factors() if isinstance(x, Mapping) else tuple(x)


# --- fragments ---------------------------------------------------------------------------


@attrs.frozen(order=True)
class Frag:
    """A live digit range of one axis: coordinates `lo * d` for `d < hi // lo`.

    `Ax(X, s, e)` covers `Frag(X, s, s * e)`; `J / 8 % 4` is `Frag("J", 8, 32)`."""

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


def inside(a: Frag, b: Frag) -> bool:
    """Is `a` a digit range of some refinement of `b` (`b.lo | a.lo` and `a.hi | b.hi`)?"""
    return a.axis == b.axis and a.lo % b.lo == 0 and b.hi % a.hi == 0


def disjoint(a: Frag, b: Frag) -> bool:
    """Do `a` and `b` share no digit (other axes, or ranges that do not meet)?"""
    return a.axis != b.axis or a.hi <= b.lo or b.hi <= a.lo


def relation(a: Frag, b: Frag) -> str:
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


def ragged_run(op: Op) -> Frag | None:
    """The live fragment of a ragged piece of the form `X # p` (cells `{X: s*d}` for
    `d < L`, then only padding), or None when the piece has another shape."""
    cells = op.cells
    live = 0
    while live < len(cells) and isinstance(cells[live], Index):
        live += 1
    if live < 2 or not all(isinstance(c, Padding) for c in cells[live:]):
        return None
    first = cells[1]
    if len(first) != 1:
        return None
    (axis,) = first
    step = first[axis]
    if any(cells[d] != Index({axis: step * d}) for d in range(live)):
        return None
    return Frag(axis, step, step * live)


def hull(op: Op) -> tuple[Frag, ...]:
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
        out.append(Frag(axis, g, g * (max(vals) // g + 1)))
    return tuple(out)


def factor_frags(f: Factor) -> tuple[Frag, ...]:
    """The live fragments of one factor: its digit range for `Ax`, the live run (or the
    conservative hull) of an `Op`, nothing for `Bc` and `Pu`."""
    if isinstance(f, Ax):
        return (Frag(f.axis, f.step, f.step * f.extent),)
    if isinstance(f, Op):
        run = ragged_run(f)
        return (run,) if run is not None else hull(f)
    return ()


def merge_frags(frags: Iterable[Frag]) -> tuple[Frag, ...]:
    """Sorted union of fragments: ranges that abut (`[1, 8)`, `[8, 32)`) merge, ranges
    inside another vanish; partly overlapping ranges stay separate."""
    out: list[Frag] = []
    for f in sorted(frags, key=lambda f: (f.axis, f.lo, -f.hi)):
        last = out[-1] if out else None
        if last is not None and inside(f, last):
            continue
        if last is not None and last.axis == f.axis and last.hi == f.lo:
            out[-1] = Frag(f.axis, last.lo, f.hi)
            continue
        out.append(f)
    return tuple(out)


def frag(mapping: FactorsLike) -> frozenset[Frag]:
    """frag(M): the axis digits covered by the live fragments of M, merged per axis."""
    return frozenset(merge_frags(f for x in as_factors(mapping) for f in factor_frags(x)))


def axes_of(mapping: FactorsLike) -> frozenset[str]:
    """axes(M): the axes with at least one live fragment in M."""
    return frozenset(f.axis for f in frag(mapping))


def places_digit_twice(*mappings: FactorsLike) -> tuple[Frag, Frag] | None:
    """The first two overlapping live fragments of one axis in the joint mapping
    `[M1, M2, ...]` (FETCH-7, COLLECT-5, OUTER-10, COMMIT-7, DMA-4), or None.

    Any interval overlap counts, aligned or not: a layout that mixes unaligned digit
    ranges of one axis is refused rather than decoded."""
    by_axis: dict[str, list[Frag]] = {}
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


# --- split, pad, resize, strip -----------------------------------------------------------


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


def _split_factor(f: Factor, t: int) -> tuple[Factor, Factor]:
    """Refine a factor into (outer extent e/t, inner extent t); never called on an Op."""
    e = f.extent
    if isinstance(f, Ax):
        return Ax(f.axis, f.step * t, e // t, f.axis_size), Ax(f.axis, f.step, t, f.axis_size)
    if isinstance(f, Bc):
        return Bc(e // t), Bc(t)
    return Pu(f.kind, e // t), Pu(f.kind, t)


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
        if n % c or f.extent % t or isinstance(f, Op):
            return None
        outer, inner = _split_factor(f, t)
        return fs[:i - 1] + (outer,), (inner,) + fs[i:]
    return fs[:i], fs[i:]


def pad(mapping: Mapping, n: int, kind: PaddingKind = PaddingKind.TOP) -> Mapping:
    """`M # n`: padding (Top unless told) up to n cells; MappingError if n < size(M)."""
    return Pad(mapping, n, kind)


def resize(mapping: Mapping, n: int) -> Mapping:
    """`M = n`: the first n cells; MappingError if n > size(M) or n < 1."""
    return Resize(mapping, n)


def strip_factors(factors: FactorsLike) -> tuple[Factor, ...]:
    """The factor list without its leading (outermost) `Pu` factors."""
    fs = as_factors(factors)
    i = 0
    while i < len(fs) and isinstance(fs[i], Pu):
        i += 1
    return fs[i:]


def strip(mapping: Mapping) -> Mapping:
    """strip(M): M without the leading `Pu` factors of its factor form, as a mapping.

    It is `M % (size(M) / k)` with k the product of those factors' extents: their digit 0
    is live, so the first size/k cells are exactly the remaining factors. Returns M itself
    when there is nothing to strip."""
    fs = mapping.factors()
    k = factor_size(fs) // factor_size(strip_factors(fs))
    return mapping if k == 1 else Modulo(mapping, mapping.size // k)


# --- refinement --------------------------------------------------------------------------


def strides(factors: FactorsLike) -> tuple[int, ...]:
    """Cell stride of each factor: the product of the extents of the factors inside it."""
    fs = as_factors(factors)
    out, c = [0] * len(fs), 1
    for i in range(len(fs) - 1, -1, -1):
        out[i] = c
        c *= fs[i].extent
    return tuple(out)


def cut(fr: Frag, points: Iterable[int]) -> tuple[Frag, ...] | None:
    """The pieces of `fr` cut at every point strictly inside it, outer (high) first; None
    when the points and the ends do not form a divisor chain `lo | t1 | ... | hi`."""
    inside = sorted({t for t in points if fr.lo < t < fr.hi})
    bounds = [fr.lo, *inside, fr.hi]
    if any(b % a for a, b in zip(bounds, bounds[1:])):
        return None
    return tuple(Frag(fr.axis, a, b) for a, b in reversed(list(zip(bounds, bounds[1:]))))


def boundary_points(factors: Iterable[Factor]) -> dict[str, set[int]]:
    """Per axis, the ends of every aligned live fragment (Ax digit ranges, `X # p` runs)."""
    out: dict[str, set[int]] = {}
    for f in factors:
        fr = factor_frags(f)[0] if isinstance(f, Ax) else ragged_run(f) if isinstance(f, Op) else None
        if fr is not None:
            out.setdefault(fr.axis, set()).update((fr.lo, fr.hi))
    return out


def refine(factors: FactorsLike, other: FactorsLike) -> tuple[Factor, ...] | None:
    """`factors` with every `Ax` cut at the fragment ends of `other` on the same axis;
    None when a cut breaks the divisor chain (no common refinement). Bc, Pu and Op stay
    whole (an Op is never refined; matching decides about it)."""
    points = boundary_points(as_factors(other))
    out: list[Factor] = []
    for f in as_factors(factors):
        if not isinstance(f, Ax):
            out.append(f)
            continue
        pieces = cut(factor_frags(f)[0], points.get(f.axis, ()))
        if pieces is None:
            return None
        out.extend(Ax(f.axis, p.lo, p.extent, f.axis_size) for p in pieces)
    return tuple(out)


def common_refinement(fa: FactorsLike,
                      fb: FactorsLike) -> tuple[tuple[Factor, ...], tuple[Factor, ...]] | None:
    """Refinements of both lists in which every Ax fragment of one equals or is disjoint
    from every Ax fragment of the other; None when none exists (`A % 5, A / 5` against
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


def _same_kind(a: Factor, b: Factor) -> bool:
    return (isinstance(a, Bc) and isinstance(b, Bc)) or (
        isinstance(a, Pu) and isinstance(b, Pu) and a.kind == b.kind)


def divide(m: FactorsLike, n: FactorsLike) -> DivideResult | None:
    """divide(M, N): match every factor of a refinement of N with a factor of a refinement
    of M (same axis and digits for Ax, identical table for Op, same kind for Bc/Pu, whose
    extents may be split), in any order; None when some factor of N has no match."""
    pair = common_refinement(m, n)
    if pair is None:
        return None
    rm, rn = pair
    sm, sn = strides(rm), strides(rn)
    kept: list[int | None] = [None] * len(rm)  # stride in N of a matched Ax/Op
    used = [1] * len(rm)  # Bc/Pu: extent consumed from the inner side so far
    parts: list[list[Loop]] = [[] for _ in rm]  # Bc/Pu: matched parts, inner first
    for j in range(len(rn) - 1, -1, -1):  # inner first, so Bc/Pu parts stack up inner first
        g = rn[j]
        if isinstance(g, (Ax, Op)):
            i = next((i for i, f in enumerate(rm) if kept[i] is None and f == g), None)
            if i is None:
                return None
            kept[i] = sn[j]
            continue
        # Bc/Pu: refine g across M's factors of its kind, taking the shared part of each
        # (cells of Bc(a*b) and Bc(a), Bc(b) agree, so any split works; greedy never wastes)
        rest, stride_n = g.extent, sn[j]
        for i in range(len(rm) - 1, -1, -1):
            take = math.gcd(rest, rm[i].extent // used[i]) if _same_kind(rm[i], g) else 1
            if take > 1:
                part = Bc(take) if isinstance(g, Bc) else Pu(g.kind, take)
                parts[i].append(Loop(part, sm[i] * used[i], stride_n))
                used[i], rest, stride_n = used[i] * take, rest // take, stride_n * take
        if rest > 1:
            return None
    loops: list[Loop] = []
    for i, f in enumerate(rm):
        if isinstance(f, (Ax, Op)):
            loops.append(Loop(f, sm[i], kept[i]))
            continue
        rest = f.extent // used[i]
        if rest > 1:
            outer = Bc(rest) if isinstance(f, Bc) else Pu(f.kind, rest)
            loops.append(Loop(outer, sm[i] * used[i], None))
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


_SEQUENCE_NAMES = ("sequence", "burst", "SequenceResult", "SequenceFailure")


def __getattr__(name: str) -> object:
    """Re-export the sequencer API lazily: `ir.mapping.sequence` imports this module, so an
    eager import here would be circular."""
    if name in _SEQUENCE_NAMES:
        return getattr(importlib.import_module("ir.mapping.sequence"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
