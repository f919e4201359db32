"""Commit rules (docs/machine/commit.md): COMMIT-1..7, then SPACE-2/3 and MEM-1 on the new tensor.

The write plan they check is `ir.rules.commit_plan`'s; the Cast Engine and commit
conversion rules are `ir.rules.cast`'s.
"""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.errors import MappingError
from ir.mapping import levels
from ir.mapping.cells import Padding
from ir.mapping.factors import BroadcastFactor, Factor, PaddingFactor, RaggedFactor
from ir.mapping.nodes import Mapping, Pair, axis_sizes, pair_all
from ir.mapping.ops import (
    Entry, DigitRange, aligned_frag, factor_frags, frag, inside, merge_frags, places_digit_twice, ragged_run, relation,
)
from ir.mapping.sequence import SequenceFailure, SequenceResult
from ir.rules.commit_plan import (
    COMMIT_BASE, SEQ_MAX_ENTRIES, SEQ_MAX_ITER, CommitWritePlan, place_stream, plan_of, unplaced,
)
from ir.rules.commit_text import bytes_text, m_text
from ir.rules.dma_text import factor_text, frag_text
from ir.rules.space import predicate, validate_type
from ir.types import StreamType

__all__ = ["check_commit"]


# --- commit ------------------------------------------------------------------------------


def check_commit(op) -> Violation | None:
    """COMMIT-1, COMMIT-7, COMMIT-2..6, then SPACE-2/3 and MEM-1 on the new tensor."""
    t, element, out = op.input.type, op.element, op.result.type
    d, p = t.dtype, t.packet
    found = predicate(levels.pkt_commit(p, d.bits), "COMMIT-1")
    if found is not None:
        return attrs.evolve(found, message="a committed packet is 8, 16, 24 or 32 bytes",
                            label=f"packet {m_text(p)} is {bytes_text(p.size, d)}")
    state: dict = {}
    steps = [("COMMIT-7", lambda: _commit7(out, element)),
             ("COMMIT-2", lambda: _commit2(t, element, state)),
             ("COMMIT-3", lambda: _commit3(t, element, state["written"])),
             ("COMMIT-4", lambda: _commit45(state.setdefault("plan", plan_of(d, state["written"])))),
             ("COMMIT-6", lambda: _commit6(state["plan"], d)),
             ("MEM-1", lambda: _new_tensor(out))]
    for code, step in steps:
        try:
            found = step()
        except MappingError as e:  # a mapping without a factor form (overshooting cells)
            return Violation(code, f"the element layout cannot be written: {e.detail}",
                             label=f"element {m_text(element)}",
                             help="write the element with digit ranges that stay inside their axes, each once")
        if found is not None:
            return found
    return None


def _new_tensor(out) -> Violation | None:
    """SPACE-2, SPACE-3, MEM-1 on the committed tensor."""
    found = validate_type(out, None)
    if found is None:
        return None
    return attrs.evolve(found, label=found.label or f"the committed tensor is {out}")


def _levels_holding(fr: DigitRange, named: list[tuple[str, Mapping]]) -> list[int]:
    return [i for i, (_, mp) in enumerate(named) if any(relation(fr, g) != "disjoint" for g in frag(mp))]


def _commit7(out, element: Mapping) -> Violation | None:
    twice = places_digit_twice(out.chip, out.cluster, out.slice, element)
    if twice is None:
        return None
    a, b = twice
    sizes = axis_sizes(out.chip, out.cluster, out.slice, element)
    named = [("Chip", out.chip), ("Cluster", out.cluster), ("Slice", out.slice), ("element", element)]
    ia = (_levels_holding(a, named) or [3])[0]
    ib = next((i for i in _levels_holding(b, named) if i != ia), ia)
    where = [f"{named[i][0]} {m_text(named[i][1])}" for i in (ia, ib)]
    return Violation("COMMIT-7", "the new tensor places a digit of an axis twice",
                     label=f"`{frag_text(b, sizes.get(b.axis))}` in {where[1]} is already placed by "
                           f"`{frag_text(a, sizes.get(a.axis))}` in {where[0]}",
                     help="leave out of the element every digit range the stream's Chip, Cluster and Slice "
                          "already fix")


def _commit2(t: StreamType, element: Mapping, state: dict) -> Violation | None:
    written = state["written"] = place_stream(t, element)
    if isinstance(written, SequenceFailure):
        return Violation("COMMIT-2", f"the stream cannot be placed into the element {m_text(element)}",
                         label=written.reason,
                         help=f"every stream digit range must be a digit range of the element; the default "
                              f"`commit()` writes {m_text(_default(t))}")
    lost = unplaced(written)
    if lost is None:
        return None
    level, piece = lost
    sizes = axis_sizes(t.time, t.packet, element)
    if isinstance(piece, RaggedFactor):
        what = factor_text(piece)
    else:
        what = frag_text(factor_frags(piece)[0], sizes.get(piece.axis))
    return Violation("COMMIT-2", "a stream digit range has nowhere to go in the element",
                     label=f"`{what}` of the stream {'time' if level == 0 else 'packet'} is not in {m_text(element)}",
                     help=f"add it to the element; the default `commit()` writes {m_text(_default(t))}")


def _default(t: StreamType) -> Mapping:
    """The element the default `commit()` writes: `[Time, Packet]`."""
    return pair_all([t.time, t.packet])


def _commit3(t: StreamType, element: Mapping, written: SequenceResult) -> Violation | None:
    sizes = axis_sizes(t.time, t.packet, element)
    twice = places_digit_twice(t.time, t.packet)
    if twice is not None:
        a, b = twice
        return _c3(f"`{frag_text(a, sizes.get(a.axis))}` and `{frag_text(b, sizes.get(b.axis))}` of the stream "
                   f"overlap, so the same element cells are written twice")
    mem = element.factors()
    for level in (0, 1):
        for piece, entry in zip(written.pieces[level], written.levels[level]):
            if isinstance(piece, BroadcastFactor) and piece.extent > 1:
                return _c3(f"the stream repeats each value {piece.extent} times (broadcast factor "
                           f"`{piece.extent}`): a broadcast write")
            if isinstance(piece, PaddingFactor) and entry.stride == 0:
                return _c3(f"the padding `{factor_text(piece)}` of the stream has no matching padding in "
                           f"{m_text(element)}, so its positions would overwrite live cells",
                           help="give the element the same padding at the same place (e.g. "
                                f"{m_text(_default(t))})")
            if isinstance(piece, RaggedFactor):
                found = _ragged_padding(piece, mem, element)
                if found is not None:
                    return found
    for f in mem:
        if isinstance(f, BroadcastFactor):
            return _c3(f"the element's broadcast factor `{f.extent}` holds copies no commit writes")
    stream = merge_frags(fr for lvl in written.pieces for f in lvl for fr in factor_frags(f))
    fr = _never_written(element, stream)
    if fr is not None:
        return _c3(f"`{frag_text(fr, sizes.get(fr.axis))}` of {m_text(element)} is never written by the stream",
                   help=f"drop it from the element; the default `commit()` writes {m_text(_default(t))}")
    return None


def _never_written(element: Mapping, stream) -> DigitRange | None:
    """A digit range of the element outside every stream range, or None. The element's ranges
    are read jointly and (for several terms) term by term, as `place_stream` places them: a
    padded axis split over two terms (`R # 16 / 8, R # 16 % 8`) is `R[1:10]` jointly but
    `R[1:16]` by its terms, as the stream that writes it."""
    views = [sorted(frag(element))]
    if isinstance(element, Pair):
        views.append(sorted(merge_frags(g for term in element.flatten() for g in frag(term))))
    missing = [next((fr for fr in view if not any(_covered(fr, g) for g in stream)), None) for view in views]
    return None if None in missing else missing[0]


def _covered(fr: DigitRange, g: DigitRange) -> bool:
    """Does the stream range `g` write every coordinate of the element range `fr`? A digit range
    of it does; so does a padded one that reaches past it (`R[1:10]` under `R[1:16]`, the
    stream `R # 16 / 8 ; R # 16 % 8` writing an element `R # 16` with |R| = 10)."""
    if relation(fr, g) in ("equal", "inside"):
        return True
    return fr.axis == g.axis and fr.lo % g.lo == 0 and fr.hi - fr.lo < g.hi


def _c3(label: str, help: str | None = None) -> Violation:
    return Violation("COMMIT-3", "every live cell of the new tensor must be written exactly once", label=label,
                     help=help)


def _ragged_padding(piece: RaggedFactor, mem: tuple[Factor, ...], element: Mapping) -> Violation | None:
    """A ragged stream piece `X # p` placed by its live run: its padding positions must land
    on padding of the memory piece that holds the run (an identical piece always does)."""
    if piece in mem:
        return None
    run = ragged_run(piece)
    if run is None or run.extent == piece.extent:
        return None
    for f in mem:
        held = aligned_frag(f)
        if held is None:
            continue
        # a run inside the memory piece's run, or (both padded) its padded extent inside the
        # memory piece's: `R # 16 / 4` (R[4:12], padded R[4:16]) in `R # 16`'s R[2:16]
        padded_in = isinstance(f, RaggedFactor) and inside(DigitRange(run.axis, run.lo, run.lo * piece.extent),
                                                           DigitRange(held.axis, held.lo, held.lo * f.extent))
        if relation(run, held) not in ("equal", "inside") and not padded_in:
            continue
        k = run.lo // held.lo
        if isinstance(f, RaggedFactor) and all(k * d < f.extent and isinstance(f.cells[k * d], Padding)
                                     for d in range(run.extent, piece.extent)):
            return None
        break
    return _c3(f"the padding positions of the stream's ragged piece ({piece.extent} cells, {run.extent} live) "
               f"land outside the padding of {m_text(element)}",
               help="pad the element the same way as the stream")


def _commit45(plan: CommitWritePlan) -> Violation | None:
    entries = plan.entries
    if len(entries) > SEQ_MAX_ENTRIES:
        return Violation("COMMIT-4", f"the commit needs {len(entries)} sequencer entries; a sequencer has "
                                     f"{SEQ_MAX_ENTRIES}",
                         label=f"write plan time [{_entries(plan.time)}], packet [{_entries(plan.packet)}]",
                         notes=("docs/machine/index.md predicate SEQ",),
                         help="keep more stream factors in the element's order, so that neighbours merge")
    for e in entries:
        if e.size > SEQ_MAX_ITER:
            return Violation("COMMIT-5", f"a commit loop of {e.size} iterations exceeds the limit of "
                                         f"{SEQ_MAX_ITER}",
                             label=f"write plan time [{_entries(plan.time)}], packet [{_entries(plan.packet)}]",
                             notes=("docs/machine/index.md predicate SEQ",),
                             help="split the stream's time so that consecutive factors are not contiguous "
                                  "in the element, or use a smaller tensor")
    return None


def _entries(es: tuple[Entry, ...]) -> str:
    return ", ".join(f"{e.size} : {e.stride}" for e in es)


def _commit6(plan: CommitWritePlan, d: DType) -> Violation | None:
    label = f"write plan time [{_entries(plan.time)}], packet [{_entries(plan.packet)}] (strides in {d} elements)"
    for e in plan.time:
        if (e.stride * d.bits) % (8 * COMMIT_BASE):
            return Violation("COMMIT-6", f"consecutive packets are written {e.stride * d.bits / 8:g} bytes apart; "
                                         f"time strides must be multiples of {COMMIT_BASE} bytes",
                             label=label,
                             help=f"pad the element so that each row of the layout is a multiple of "
                                  f"{COMMIT_BASE} bytes")
    if (plan.piece_elems * d.bits) % (8 * COMMIT_BASE):
        return Violation("COMMIT-6", f"a packet is written in contiguous pieces of {plan.piece_bytes:g} bytes; "
                                     f"pieces must be multiples of {COMMIT_BASE} bytes",
                         label=label,
                         help="keep the packet's innermost cells contiguous in the element for at least "
                              f"{COMMIT_BASE} bytes")
    for e in plan.piece_starts:
        if (e.stride * d.bits) % (8 * COMMIT_BASE):
            return Violation("COMMIT-6", f"the pieces of a packet start {e.stride * d.bits / 8:g} bytes apart; "
                                         f"a packet may split only at {COMMIT_BASE}-byte boundaries",
                             label=label,
                             help=f"pad the element so that the packet's pieces start on {COMMIT_BASE}-byte "
                                  f"boundaries")
    return None
