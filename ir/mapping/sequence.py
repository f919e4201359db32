"""The sequencer matcher `sequence(memory, stream)` and the DMA burst (docs/machine/index.md).

A stream factor becomes one loop entry per piece of a common refinement, whose stride is
the cell stride in memory of the same digits. Both operations work from factor forms; the
burst evaluates cells only at the positions a factor boundary leaves undecided.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

import attrs
import numpy as np

from ir.mapping.cells import LIVE, CellTable
from ir.mapping.factors import AxisFactor, BroadcastFactor, Factor, PaddingFactor, RaggedFactor, canon, same_kind
from ir.mapping.nodes import Mapping, PaddingKind
from ir.mapping.ops import (
    Entry, FactorsLike, DigitRange, boundary_points, coalesce, cut, disjoint, factor_frags, frag, hull, inside,
    merge_frags, ragged_run, strides,
)
from ir.mapping.ragged_layout import laid_out_runs
from ir.mapping.ranges import group_run, inside_to_end

__all__ = ["sequence", "SequenceResult", "SequenceFailure", "burst", "Levels"]

# A mapping, a factor list, or a list of levels (mappings or factor lists), outer first.
Levels = Union[FactorsLike, Sequence[Union[Mapping, Sequence[Factor]]]]


@attrs.frozen
class SequenceResult:
    """A successful match: `levels[k]` holds the entries of stream level k, outer to inner,
    one per stream piece; `pieces[k]` the matching (refined) stream factors, so a caller
    can tell a live factor at stride 0 (a broadcast) from padding."""

    levels: tuple[tuple[Entry, ...], ...]
    pieces: tuple[tuple[Factor, ...], ...]
    # (level, index) of the ragged stream pieces memory holds with the same cells at the same
    # places (an identical piece, or one a run of its digits lays out): they move whole, padding
    # onto padding
    whole: frozenset[tuple[int, int]] = frozenset()

    ok = True

    def __bool__(self) -> bool:
        return True

    @property
    def entries(self) -> tuple[Entry, ...]:
        """All entries, outer to inner, levels concatenated."""
        return tuple(e for lvl in self.levels for e in lvl)

    def coalesced(self) -> tuple[tuple[Entry, ...], ...]:
        """Each level's entries coalesced separately (docs/machine/fetch.md)."""
        return tuple(coalesce(lvl) for lvl in self.levels)


@attrs.frozen
class SequenceFailure:
    """A refused match; `reason` says which fragment failed and why. Falsy."""

    reason: str

    ok = False

    def __bool__(self) -> bool:
        return False


class _Refused(Exception):
    """Internal: carries a failure reason out of the matcher."""


def _levels(x: Levels) -> list[tuple[Factor, ...]]:
    """Factor lists of the levels of a memory or stream argument."""
    if isinstance(x, Mapping):
        return [x.factors()]
    items = list(x)
    if all(isinstance(i, (AxisFactor, BroadcastFactor, PaddingFactor, RaggedFactor)) for i in items):
        return [tuple(items)]
    return [i.factors() if isinstance(i, Mapping) else tuple(i) for i in items]


class _Matcher:
    """The memory side of one `sequence` call: where each digit of each axis lives."""

    def __init__(self, mem: tuple[Factor, ...], sizes: dict[str, int]) -> None:
        st = strides(mem)
        self.sizes = sizes
        self.points = boundary_points(mem)
        self.frags: dict[str, list[tuple[DigitRange, int]]] = {}  # aligned live fragments, cell stride
        self.padded: dict[DigitRange, DigitRange] = {}  # `X # p` run -> its whole padded range
        self.hulls: dict[str, list[DigitRange]] = {}  # irregular ragged pieces: opaque regions
        self.ops: list[tuple[RaggedFactor, int]] = []
        self.pus: list[list] = []  # [PaddingFactor, stride, extent consumed so far, live digits inner to it]
        for i, f in enumerate(mem):
            run = ragged_run(f) if isinstance(f, RaggedFactor) else None
            group = group_run(f) if isinstance(f, RaggedFactor) and run is None else None
            if isinstance(f, AxisFactor) or run is not None:
                fr = run if run is not None else factor_frags(f)[0]
                self.frags.setdefault(fr.axis, []).append((fr, st[i]))
                if run is not None:
                    self.padded[run] = DigitRange(run.axis, run.lo, run.lo * f.extent)
            elif group is not None:  # `[A, B] # p`: each digit range at its place in the live run
                s = st[i]
                for r in reversed(group):
                    self.frags.setdefault(r.axis, []).append((r, s))
                    s *= r.hi // r.lo
            elif isinstance(f, RaggedFactor):
                for h in hull(f):
                    self.hulls.setdefault(h.axis, []).append(h)
            if isinstance(f, RaggedFactor):
                self.ops.append((f, st[i]))
            if isinstance(f, PaddingFactor):
                self.pus.append([f, st[i], 1, frag(mem[i + 1:])])

    def place(self, piece: DigitRange, padded: DigitRange | None = None) -> int:
        """Memory stride of a digit range: linear inside the one memory fragment holding it,
        0 when the memory lacks those digits; _Refused otherwise. `padded`: the piece's
        extent over its padding (the live run of a stream `X # p` piece)."""
        if any(not disjoint(piece, h) for h in self.hulls.get(piece.axis, ())):
            raise _Refused(f"stream fragment {piece} overlaps a ragged memory piece")
        hits = [(fr, s) for fr, s in self.frags.get(piece.axis, ()) if not disjoint(piece, fr)]
        if not hits:
            return 0
        if len(hits) > 1:
            raise _Refused(f"the memory places digits of {piece.axis} twice ({hits[0][0]}, {hits[1][0]})")
        fr, s = hits[0]
        if inside(piece, fr):
            return s * (piece.lo // fr.lo)
        whole = self.padded.get(fr)
        if whole is not None and (inside(piece, whole) or (padded is not None and inside(padded, whole))):
            # A digit of the padded axis (`R # 16 % 8` on memory `R # 16`, |R| = 10): the run's
            # cells are linear over its padded extent too, and the piece's coordinates past |R|
            # are padding on both sides, so it is placed like a digit of the run. So is a stream
            # run `R # 16 / 4` (live R[4:12], padded R[4:16]) inside the memory's R[2:16].
            return s * (piece.lo // fr.lo)
        size = self.sizes.get(piece.axis)
        if inside_to_end(piece, fr, size):  # `R13[1:13]` (a ragged run) in `R13[1:16]`
            return s * (piece.lo // fr.lo)
        if size is not None and piece.hi > fr.hi and piece.hi > size:
            raise _Refused(f"stream fragment {piece} lies outside the extent of axis {piece.axis} "
                           f"(|{piece.axis}| = {size}, memory holds {fr})")
        raise _Refused(f"partial overlap: stream fragment {piece} only partly overlaps memory fragment {fr}")

    def ax(self, f: AxisFactor) -> list[tuple[Factor, Entry]]:
        fr = factor_frags(f)[0]
        pieces = cut(fr, self.points.get(f.axis, ()))
        if pieces is None:  # a padded digit may cross the end of an `X # p` run: cut at its padded end
            pieces = cut(fr, self._padded_points(f.axis))
        if pieces is None:
            inside = sorted(t for t in self.points.get(f.axis, ()) if fr.lo < t < fr.hi)
            raise _Refused(f"no common refinement: stream fragment {fr} cannot be cut at the "
                           f"memory's digit boundaries {inside}")
        return [(AxisFactor(f.axis, p.lo, p.extent, f.axis_size), Entry(p.extent, self.place(p))) for p in pieces]

    def _padded_points(self, axis: str) -> set[int]:
        runs = {fr.hi: self.padded[fr].hi for fr, _ in self.frags.get(axis, ()) if fr in self.padded}
        return {runs.get(t, t) for t in self.points.get(axis, ())}

    def op(self, f: RaggedFactor) -> list[tuple[Factor, Entry]]:
        for op, s in self.ops:
            if op == f:
                return [(f, Entry(f.extent, s))]
        run = ragged_run(f)
        if run is not None:  # `X # p`: padded positions read past the live run
            return [(f, Entry(f.extent, self.place(run, DigitRange(run.axis, run.lo, run.lo * f.extent))))]
        group = group_run(f)
        if group is not None:  # `[A, B] # p` over memory digits that step as one: the same, read as one run
            placed = [self.place(r) for r in group]
            if placed[-1] and all(placed[i] == placed[i + 1] * (group[i + 1].hi // group[i + 1].lo)
                                  for i in range(len(group) - 1)):
                return [(f, Entry(f.extent, placed[-1]))]
        regions = [fr for lst in self.frags.values() for fr, _ in lst]
        regions += [h for lst in self.hulls.values() for h in lst]
        if all(disjoint(h, r) for h in hull(f) for r in regions):  # axes the memory lacks
            return [(f, Entry(f.extent, 0))]
        raise _Refused(f"ragged stream piece {f} does not match the memory (a RaggedFactor is never refined)")

    def _clamped(self, digits: frozenset[DigitRange]) -> frozenset[DigitRange]:
        """`digits` with each range ending at its axis's last step (a padded digit that
        overshoots the axis, `R # 16 / 4 % 2` of |R| = 6 reaching R = 8, covers what the
        memory's ragged run up to R = 6 does)."""
        out = []
        for d in digits:
            size = self.sizes.get(d.axis)
            out.append(d if size is None else DigitRange(d.axis, d.lo, min(d.hi, d.lo * -(-size // d.lo))))
        return frozenset(merge_frags(out))

    def pu(self, f: PaddingFactor, inner: frozenset[DigitRange]) -> list[tuple[Factor, Entry]]:
        for slot in self.pus:
            mpu, s, used, digits = slot
            same = digits == inner or self._clamped(digits) == self._clamped(inner)
            if mpu.kind == f.kind and same and (mpu.extent // used) % f.extent == 0:
                slot[2] = used * f.extent  # consume the memory PaddingFactor from its inner side
                return [(f, Entry(f.extent, s * used))]
        return [(f, Entry(f.extent, 0))]


def sequence(memory: Levels, stream: Levels) -> SequenceResult | SequenceFailure:
    """The sequencer matcher of docs/machine/index.md: entries `(size, stride)` per stream piece.

    `memory` and `stream` are mappings, factor lists, or lists of levels (e.g. `[Tin, Pin]`
    and `[time, packet]`); memory levels are joined, stream levels are kept apart in the
    result. Strides are cell strides in the joint memory. Per stream factor, inner first:

    * AxisFactor: cut at the memory's fragment ends (they must form a divisor chain, else "no
      common refinement"); each piece lies inside exactly one memory fragment (an AxisFactor range
      or the live run of an `X # p` piece; stride linear in it) or is disjoint from all
      of them (stride 0, a broadcast); anything else is refused.
    * RaggedFactor: the stride of an identical memory RaggedFactor, else its live run placed as above.
    * A run of AxisFactors (across levels) that walks a memory RaggedFactor cell for cell (a
      padded axis whose digits memory holds apart, `ir.mapping.ragged_layout`): each at the
      piece's stride times the extent inner to it in the run.
    * PaddingFactor: the stride of an unused part of a memory PaddingFactor of the same kind whose extent it
      divides, with the same live digits inner to it; else 0. BroadcastFactor: 0."""
    mem = tuple(canon([f for lvl in _levels(memory) for f in lvl]))
    levels = _levels(stream)
    sizes = {f.axis: f.axis_size for lvl in (mem, *levels) for f in lvl if isinstance(f, AxisFactor)}
    matcher = _Matcher(mem, sizes)
    joint = [(k, f) for k, lvl in enumerate(levels) for f in lvl]
    laid = laid_out_runs(mem, [f for _, f in joint])  # digits walking a ragged memory piece cell for cell
    done: list[list[tuple[Factor, Entry]]] = []
    inner_frags: list[DigitRange] = []
    try:
        for j in reversed(range(len(joint))):  # inner first: PaddingFactor matching needs the digits inner to it
            f = joint[j][1]
            if j in laid:
                done.append([(f, laid[j])])
            elif isinstance(f, AxisFactor):
                done.append(matcher.ax(f))
            elif isinstance(f, RaggedFactor):
                done.append(matcher.op(f))
            elif isinstance(f, PaddingFactor):
                done.append(matcher.pu(f, frozenset(merge_frags(inner_frags))))
            else:
                done.append([(f, Entry(f.extent, 0))])
            inner_frags.extend(factor_frags(f))
    except _Refused as e:
        return SequenceFailure(str(e))
    pieces: list[list[Factor]] = [[] for _ in levels]
    entries: list[list[Entry]] = [[] for _ in levels]
    whole = set()
    for j, ((k, f), got) in enumerate(zip(joint, reversed(done))):
        if isinstance(f, RaggedFactor) and len(got) == 1 and (j in laid or f in mem):
            whole.add((k, len(pieces[k])))
        pieces[k].extend(p for p, _ in got)
        entries[k].extend(e for _, e in got)
    return SequenceResult(tuple(map(tuple, entries)), tuple(map(tuple, pieces)), frozenset(whole))


# --- DMA burst ---------------------------------------------------------------------------

_CHUNK_MAX = 1 << 20


def _coord(table: CellTable, name: str) -> np.ndarray:
    vals = table.coords.get(name)
    return np.zeros(len(table), dtype=np.int64) if vals is None else np.broadcast_to(vals, (len(table),))


def _bad(src: CellTable, dst: CellTable) -> np.ndarray:
    """Positions where the destination cell is neither Padding(Top) nor the source cell."""
    ds, ss = dst.status, src.status
    good = (ds == PaddingKind.TOP) | ((ds == ss) & (ds < PaddingKind.TOP + 1))
    same = (ds == LIVE) & (ss == LIVE)
    for name in set(dst.coords) | set(src.coords):
        same &= _coord(dst, name) == _coord(src, name)
    return ~(good | same)


def _first_bad(src: Mapping, dst: Mapping, offset: int, scale: int, count: int) -> int | None:
    """Smallest j < count whose position `offset + scale * j` is bad, scanning in growing
    chunks so that an early mismatch costs little."""
    start, chunk = 0, 256
    big = offset + scale * count >= 2**62
    while start < count:
        stop = min(count, start + chunk)
        j = np.arange(start, stop, dtype=np.int64)
        pos = offset + scale * (j.astype(object) if big else j)
        # positions past the source's end are out of bounds there; clipping keeps them small
        bad = _bad(src.cells(np.minimum(pos, src.size)), dst.cells(pos))
        if bad.any():
            return start + int(np.argmax(bad))
        start, chunk = stop, min(chunk * 4, _CHUNK_MAX)
    return None


def _locate(factors: tuple[Factor, ...], p: int) -> tuple[Factor, int] | None | bool:
    """Where a list splits at cell stride p: (factor, t) with p = t * (its cell stride);
    True when p is at or past the end (everything there is out of bounds); None when no
    refinement has a boundary at p."""
    a = 1
    for g in reversed(factors):
        if a <= p < a * g.extent:
            t = p // a
            if p % a or (t > 1 and (isinstance(g, RaggedFactor) or g.extent % t)):
                return None
            return g, t
        a *= g.extent
    return True


def _same_digits(f: Factor, g: Factor, t: int) -> bool:
    """Do the cells of `f` equal those of `g` at digits 0, t, 2t, ... (inside g)?"""
    if t * (f.extent - 1) >= g.extent:
        return False
    if isinstance(f, AxisFactor) and isinstance(g, AxisFactor):
        return f.axis == g.axis and f.step == g.step * t
    return same_kind(f, g)


def _largest_divisor_at_most(n: int, limit: int) -> int:
    """Largest divisor of n not above limit, from n's prime factors (sizes are smooth)."""
    divisors, rest, d = [1], n, 2
    while d * d <= rest:
        k = 0
        while rest % d == 0:
            rest, k = rest // d, k + 1
        divisors = [x * d**i for x in divisors for i in range(k + 1)]
        d += 1
    if rest > 1:
        divisors = divisors + [x * rest for x in divisors]
    return max(x for x in divisors if x <= limit)


def burst(source: Mapping, dest: Mapping) -> int:
    """The DMA burst (docs/machine/dma.md): the largest m dividing size(dest) such that every
    cell p < m of `dest` is Padding(Top) or equals the cell p of `source`.

    Walks the destination factors inner to outer. While both lists split at the running
    stride P, the first bad position inside the next factor is P*j for its first bad
    digit j, decided structurally when the source has the same digits there and by
    evaluating those few cells otherwise; a Top padding factor is always good. Only when
    the source has no boundary at P are the positions from P on scanned one by one."""
    fs, fd = source.factors(), dest.factors()
    p, limit = 1, dest.size
    for f in reversed(fd):
        if isinstance(f, PaddingFactor) and f.kind == PaddingKind.TOP:
            p *= f.extent
            continue
        loc = _locate(fs, p)
        if loc is None:
            j = _first_bad(source, dest, p, 1, dest.size - p)
            limit = dest.size if j is None else p + j
            break
        if loc is True or not _same_digits(f, *loc):
            j = _first_bad(source, dest, 0, p, f.extent)
            if j is not None:
                limit = p * j
                break
        p *= f.extent
    return _largest_divisor_at_most(dest.size, limit)
