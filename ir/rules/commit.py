"""Cast and Commit rules (docs/machine/commit.md): CAST-1..4, TRIM-1..2, CTX-4, CCAST-1..2, COMMIT-1..7.

Also the commit write plan (docs/machine/commit.md) that the lowering (`CommitOp`) and the cpu
backend use: `sequence(memory = element, stream = [Time, Packet])`, each descriptor
coalesced separately, strides in destination elements.
"""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.dtypes import CAST_ENGINE, COMMIT_CASTS, DType
from ir.errors import MappingError
from ir.mapping import levels
from ir.mapping.cells import Padding
from ir.mapping.factors import AxisFactor, BroadcastFactor, Factor, PaddingFactor, RaggedFactor
from ir.mapping.nodes import Mapping, Pad, Pair, Resize, axis_sizes, pair_all
from ir.mapping.ops import (
    Entry, DigitRange, factor_frags, frag, merge_frags, places_digit_twice, ragged_run, relation,
)
from ir.mapping.sequence import SequenceFailure, SequenceResult, sequence
from ir.rules.dma import factor_text, frag_text
from ir.rules.space import predicate, validate_type
from ir.types import MAIN, StreamType

__all__ = [
    "check_cast", "check_trim", "check_commit_cast", "check_commit", "commit_write_plan",
    "CommitWritePlan", "COMMIT_WIDTHS", "COMMIT_BASE", "SEQ_MAX_ENTRIES", "SEQ_MAX_ITER",
]

COMMIT_WIDTHS = (8, 16, 24, 32)  # docs/machine/index.md: legal bytes of one committed packet
COMMIT_BASE = 8  # commit write granularity in bytes
SEQ_MAX_ENTRIES = 8
SEQ_MAX_ITER = 65536


def _m(mp: Mapping) -> str:
    """`m("...")` text of a mapping, without the outer brackets of a pair."""
    text = str(mp)
    if isinstance(mp, Pair) and text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return f'm("{text}")'


def _bytes_text(n: int, d: DType) -> str:
    return f"{n} x {d} = {n * d.bits / 8:g} bytes"


# --- the write plan ----------------------------------------------------------------------


@attrs.frozen
class CommitWritePlan:
    """How the Commit Engine writes one stream into DM (docs/machine/commit.md).

    `time` and `packet` are the coalesced descriptors (strides in destination elements);
    `raw_time` / `raw_packet` have one entry per stream piece of the common refinement,
    `time_pieces` / `packet_pieces` the matching stream factors. A packet is written as
    contiguous runs of `piece_elems` elements, one run starting at every position of the
    loop `piece_starts` (the packet entries outside the innermost contiguous one)."""

    dtype: DType
    time: tuple[Entry, ...]
    packet: tuple[Entry, ...]
    raw_time: tuple[Entry, ...]
    raw_packet: tuple[Entry, ...]
    time_pieces: tuple[Factor, ...]
    packet_pieces: tuple[Factor, ...]
    piece_elems: int
    piece_starts: tuple[Entry, ...]

    @property
    def entries(self) -> tuple[Entry, ...]:
        """Time then packet entries, as the sequencer counts them (COMMIT-4)."""
        return self.time + self.packet

    @property
    def piece_bytes(self) -> float:
        return self.piece_elems * self.dtype.bits / 8

    @property
    def contiguous(self) -> bool:
        """True when one packet is one contiguous write."""
        return not self.piece_starts


def _plan(dtype: DType, found: SequenceResult) -> CommitWritePlan:
    time, packet = found.coalesced()
    if packet and packet[-1].stride == 1:
        piece, starts = packet[-1].size, packet[:-1]
    else:
        piece, starts = 1, packet
    return CommitWritePlan(dtype, time, packet, found.levels[0], found.levels[1],
                           found.pieces[0], found.pieces[1], piece, starts)


def commit_write_plan(stream_type: StreamType, element: Mapping) -> CommitWritePlan:
    """The write plan of `commit(element)` on a stream that passed COMMIT-2; ValueError otherwise."""
    found = sequence(element, [stream_type.time, stream_type.packet])
    if isinstance(found, SequenceFailure):
        raise ValueError(f"commit of {stream_type} into {element} is not placeable: {found.reason}")
    lost = _unplaced(found)
    if lost is not None:
        raise ValueError(f"commit of {stream_type} into {element} is not placeable: {lost[1]} has nowhere to go")
    return _plan(stream_type.dtype, found)


def _unplaced(found: SequenceResult) -> tuple[int, Factor] | None:
    """The first live stream piece (level, factor) whose digits the element lacks (stride 0)."""
    for level, (pieces, entries) in enumerate(zip(found.pieces, found.levels)):
        for piece, entry in zip(pieces, entries):
            if not entry.stride and isinstance(piece, (AxisFactor, RaggedFactor)) and factor_frags(piece):
                return level, piece
    return None


# --- cast --------------------------------------------------------------------------------


def _cast_targets(d: DType) -> str:
    targets = sorted(str(b) for a, b in CAST_ENGINE if a == d)
    return ", ".join(targets) if targets else "nothing"


def check_cast(op) -> Violation | None:
    """CAST-1..4 (docs/machine/cast.md)."""
    try:
        return _check_cast(op)
    except MappingError as e:  # only the equivalence of CAST-4 needs factor forms
        return Violation("CAST-4", f"the cast packet cannot be compared with the input packet: {e.detail}")


def _check_cast(op) -> Violation | None:
    t = op.input.type
    d, d2, p, out = t.dtype, op.dtype, t.packet, op.packet
    if (d, d2) not in CAST_ENGINE:
        what = "an identity" if d == d2 else f"{d} -> {d2}"
        return Violation("CAST-1", f"the Cast Engine has no {what} conversion",
                         label=f"{d} narrows only to {_cast_targets(d)}",
                         help=f"cast {d} to one of {_cast_targets(d)}, or commit the {d} result as it is "
                              f"(drop the `.cast(...)`)")
    found = predicate(levels.pkt_flit(p, d.bits), "CAST-2")
    if found is not None:
        return attrs.evolve(found, message="the Cast Engine takes exactly one 32-byte flit per time step",
                            label=f"input packet {_m(p)} is {_bytes_text(p.size, d)}")
    found = predicate(levels.pkt_flit(out, d2.bits), "CAST-3")
    if found is not None:
        want = 32 * 8 // d2.bits
        return attrs.evolve(found, message="the Cast Engine writes exactly one 32-byte flit per time step",
                            label=f"packet {_m(out)} is {_bytes_text(out.size, d2)}",
                            help=f"use {_m(Pad(p, want))}" if want >= p.size else None)
    want = d2.flit_elems
    try:
        expected = Pad(p, want)
    except MappingError:
        expected = None
    if expected is None or not out.equivalent(expected):
        shown = _m(expected) if expected is not None else f"{p} padded to {want} cells"
        return Violation("CAST-4", "the cast packet must be the input packet padded to one flit",
                         label=f"expected {shown}, got {_m(out)}",
                         help=f"use {shown}: the live cells keep their positions, the tail is padding")
    return None


# --- commit_trim -------------------------------------------------------------------------


def check_trim(op) -> Violation | None:
    """TRIM-1, TRIM-2 (docs/machine/commit.md)."""
    try:
        return _check_trim(op)
    except MappingError as e:  # only the equivalence of TRIM-2 needs factor forms
        return Violation("TRIM-2", f"the trimmed packet cannot be compared with the packet: {e.detail}")


def _check_trim(op) -> Violation | None:
    t = op.input.type
    d, p, out = t.dtype, t.packet, op.packet
    found = predicate(levels.pkt_commit(out, d.bits), "TRIM-1")
    if found is not None:
        return attrs.evolve(found, message=f"a committed packet is {', '.join(map(str, COMMIT_WIDTHS[:-1]))} "
                                           f"or {COMMIT_WIDTHS[-1]} bytes",
                            label=f"packet {_m(out)} is {_bytes_text(out.size, d)}",
                            help=_trim_help(out, d))
    if out.size > p.size:
        return Violation("TRIM-2", "commit_trim keeps a prefix of the packet; it cannot grow it",
                         label=f"{_m(out)} has {out.size} cells, the packet {_m(p)} only {p.size}")
    prefix = Resize(p, out.size)
    if not out.equivalent(prefix):
        return Violation("TRIM-2", "commit_trim keeps the leading cells of the packet",
                         label=f"{_m(out)} is not the first {out.size} cells of the packet {_m(p)}",
                         help=f"use {_m(prefix.normalize())}")
    return None


def _trim_help(out: Mapping, d: DType) -> str:
    for width in COMMIT_WIDTHS:
        n = width * 8 // d.bits
        if n >= out.size:
            return (f"trim to a multiple of 8 bytes, e.g. {_m(Pad(out, n))} ({_bytes_text(n, d)}), "
                    f"and commit into an element with the same padding")
    return f"keep at most {COMMIT_WIDTHS[-1] * 8 // d.bits} x {d} per packet"


# --- commit_cast / commit_cast_relu ------------------------------------------------------


def check_commit_cast(op) -> Violation | None:
    """CTX-4, CCAST-1, CCAST-2 (docs/machine/commit-adapter.md)."""
    t = op.input.type
    name = "commit_cast_relu" if op.relu else "commit_cast"
    if t.context != MAIN:
        return Violation("CTX-4", f"`{name}` requires a main-context stream",
                         label=f"this stream runs in ctx.{t.context}",
                         help=f"start the stream with ctx.main.begin(...), or convert with `.cast(bf16, packet)` "
                              f"before `commit_trim`")
    if (t.dtype, op.dtype) not in COMMIT_CASTS:
        return Violation("CCAST-1", f"the Commit Adapter converts only f32 -> bf16, not {t.dtype} -> {op.dtype}",
                         label=f"`{name}({op.dtype})` on an {t.dtype} stream",
                         help="use the Cast Engine (`.cast(dtype, packet)` before `commit_trim`) for other "
                              "narrowings")
    n = t.packet.size
    if (n * 4) % 16:  # bytes(P, f32) a multiple of COMMIT_BASE * 32 / 16
        example = f" (e.g. {_m(Pad(t.packet, 4 if n <= 4 else 8))})" if n < 8 else ""
        return Violation("CCAST-2", f"`{name}` needs 16 or 32 bytes of f32 per packet",
                         label=f"packet {_m(t.packet)} is {_bytes_text(n, t.dtype)}",
                         help=f"trim to 4 or 8 x f32{example}")
    return None


# --- commit ------------------------------------------------------------------------------


def check_commit(op) -> Violation | None:
    """COMMIT-1, COMMIT-7, COMMIT-2..6, then SPACE-2/3 and MEM-1 on the new tensor."""
    t, element, out = op.input.type, op.element, op.result.type
    d, p = t.dtype, t.packet
    found = predicate(levels.pkt_commit(p, d.bits), "COMMIT-1")
    if found is not None:
        return attrs.evolve(found, message="a committed packet is 8, 16, 24 or 32 bytes",
                            label=f"packet {_m(p)} is {_bytes_text(p.size, d)}")
    state: dict = {}
    steps = [("COMMIT-7", lambda: _commit7(out, element)),
             ("COMMIT-2", lambda: _commit2(t, element, state)),
             ("COMMIT-3", lambda: _commit3(t, element, state["written"])),
             ("COMMIT-4", lambda: _commit45(state.setdefault("plan", _plan(d, state["written"])))),
             ("COMMIT-6", lambda: _commit6(state["plan"], d)),
             ("MEM-1", lambda: _new_tensor(out))]
    for code, step in steps:
        try:
            found = step()
        except MappingError as e:  # a mapping without a factor form (overshooting cells)
            return Violation(code, f"the element layout cannot be written: {e.detail}",
                             label=f"element {_m(element)}",
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
    where = [f"{named[i][0]} {_m(named[i][1])}" for i in (ia, ib)]
    return Violation("COMMIT-7", "the new tensor places a digit of an axis twice",
                     label=f"`{frag_text(b, sizes.get(b.axis))}` in {where[1]} is already placed by "
                           f"`{frag_text(a, sizes.get(a.axis))}` in {where[0]}",
                     help="leave out of the element every digit range the stream's Chip, Cluster and Slice "
                          "already fix")


def _commit2(t: StreamType, element: Mapping, state: dict) -> Violation | None:
    written = state["written"] = sequence(element, [t.time, t.packet])
    if isinstance(written, SequenceFailure):
        return Violation("COMMIT-2", f"the stream cannot be placed into the element {_m(element)}",
                         label=written.reason,
                         help=f"every stream digit range must be a digit range of the element; the default "
                              f"`commit()` writes {_m(_default(t))}")
    lost = _unplaced(written)
    if lost is None:
        return None
    level, piece = lost
    sizes = axis_sizes(t.time, t.packet, element)
    if isinstance(piece, RaggedFactor):
        what = factor_text(piece)
    else:
        what = frag_text(factor_frags(piece)[0], sizes.get(piece.axis))
    return Violation("COMMIT-2", "a stream digit range has nowhere to go in the element",
                     label=f"`{what}` of the stream {'time' if level == 0 else 'packet'} is not in {_m(element)}",
                     help=f"add it to the element; the default `commit()` writes {_m(_default(t))}")


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
                           f"{_m(element)}, so its positions would overwrite live cells",
                           help="give the element the same padding at the same place (e.g. "
                                f"{_m(_default(t))})")
            if isinstance(piece, RaggedFactor):
                found = _ragged_padding(piece, mem, element)
                if found is not None:
                    return found
    for f in mem:
        if isinstance(f, BroadcastFactor):
            return _c3(f"the element's broadcast factor `{f.extent}` holds copies no commit writes")
    stream = merge_frags(fr for lvl in written.pieces for f in lvl for fr in factor_frags(f))
    for fr in sorted(frag(element)):
        if not any(relation(fr, g) in ("equal", "inside") for g in stream):
            return _c3(f"`{frag_text(fr, sizes.get(fr.axis))}` of {_m(element)} is never written by the stream",
                       help=f"drop it from the element; the default `commit()` writes {_m(_default(t))}")
    return None


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
        held = (ragged_run(f) if isinstance(f, RaggedFactor)
                else factor_frags(f)[0] if isinstance(f, AxisFactor) else None)
        if held is None or relation(run, held) not in ("equal", "inside"):
            continue
        k = run.lo // held.lo
        if isinstance(f, RaggedFactor) and all(k * d < f.extent and isinstance(f.cells[k * d], Padding)
                                     for d in range(run.extent, piece.extent)):
            return None
        break
    return _c3(f"the padding positions of the stream's ragged piece ({piece.extent} cells, {run.extent} live) "
               f"land outside the padding of {_m(element)}",
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
