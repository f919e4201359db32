"""Begin, Fetch and Fetch Adapter rules (docs/machine/fetch.md): FETCH-1..10, FLUT-1, FCAST-1, FZPS-1..2, CTX-3.

The fetch *read plan* the rules and the lowering's FeedBuffer read is ir/rules/read_plan.py's.
"""

from __future__ import annotations

from ir.diagnostic import Violation
from ir.dtypes import FETCH_CASTS, TABLE_LOOKUPS, ZERO_POINT_SUBS, DType
from ir.errors import MappingError
from ir.machine import constants
from ir.mapping import levels
from ir.mapping.nodes import Mapping, axis_sizes
from ir.mapping.ops import DigitRange, frag, merge_frags, places_digit_twice
from ir.rules.read_plan import SUB_ACCESS_BYTES, ReadPlan, match_read
from ir.rules.commit_plan import SEQ_MAX_ENTRIES, SEQ_MAX_ITER
from ir.rules.contract_text import holding
from ir.rules.space import predicate
from ir.types import MAIN, SUB, StreamType

__all__ = [
    "check_begin", "check_fetch", "check_table_lookup", "check_fetch_cast", "check_zero_point_sub",
    "unread_fragments", "frag_text", "bytes_text", "axis_sizes", "SEQ_MAX_ENTRIES", "SEQ_MAX_ITER",
]

_FOUR_BIT = frozenset({DType.I4, DType.F4E2M1})


def unread_fragments(inputs: tuple[Mapping, ...], outputs: tuple[Mapping, ...]) -> tuple[DigitRange, ...]:
    """The live digits of `inputs` that no live fragment of `outputs` covers (FETCH-3),
    per axis, as digit ranges outer to inner."""
    have = merge_frags(f for mp in outputs for f in frag(mp))
    need = merge_frags(f for mp in inputs for f in frag(mp))
    gaps: list[DigitRange] = []
    for f in need:
        lo = f.lo
        for g in sorted((g for g in have if g.axis == f.axis and g.lo < f.hi and f.lo < g.hi),
                        key=lambda g: g.lo):
            if g.lo > lo:
                gaps.append(DigitRange(f.axis, lo, g.lo))
            lo = max(lo, g.hi)
        if lo < f.hi:
            gaps.append(DigitRange(f.axis, lo, f.hi))
    return tuple(sorted(gaps, key=lambda g: (g.axis, -g.lo)))


def frag_text(fr: DigitRange, axis_size: int | None = None) -> str:
    """A digit range as mapping text: `K / 64`, `J % 8`, `J / 8 % 4`, `B`."""
    top = axis_size if axis_size is not None else fr.hi
    if fr.lo == 1:
        return fr.axis if fr.hi >= top else f"{fr.axis} % {fr.hi}"
    if fr.hi >= top:
        return f"{fr.axis} / {fr.lo}"
    return f"{fr.axis} / {fr.lo} % {fr.hi // fr.lo}"


def bytes_text(n: int, dtype: DType) -> str:
    """`16 x i8 = 16 bytes` (or `... = 1.5 bytes` when not whole)."""
    total = n * dtype.bits
    b = total // 8 if total % 8 == 0 else total / 8
    return f"{n} x {dtype} = {b} byte{'' if b == 1 else 's'}"


# --- begin (docs/machine/fetch.md) ----------------------------------------------------------------


def check_begin(op) -> Violation | None:
    """TYPE-3, SPACE-2, SPACE-3 on the view's type (CTX-1 and TYPE-6 are the DSL's)."""
    t = op.view.type
    if not t.dtype.materializable:
        return Violation("TYPE-3", f"{t.dtype} exists only inside a stream; a DM view cannot hold it",
                         help="store i4 or i8; fetch_zero_point_sub produces i5/i9 in the stream")
    c = constants()
    return predicate(levels.cluster(t.cluster, c.CLUSTER_SIZES)) or predicate(levels.slice_(t.slice, c.SLICE_SIZES))


# --- fetch (docs/machine/fetch.md) ----------------------------------------------------------------


def check_fetch(op) -> Violation | None:
    """FETCH-1..10 (W-FETCH-1 is a lowering warning) for a Fetch op, first failure wins."""
    src: StreamType = op.input.type
    time, packet = op.time, op.packet
    return (_fetch_1(op.result.type, time, packet)
            or _fetch_placed(src, time, packet)
            or _fetch_3(src, time, packet)
            or _fetch_plan_limits(match_read(src.time, src.packet, time, packet))
            or _fetch_6(src.dtype, packet)
            or _fetch_7(src, time, packet)
            or _fetch_access(src, match_read(src.time, src.packet, time, packet)))


def _fetch_1(out: StreamType, time: Mapping, packet: Mapping) -> Violation | None:
    """FETCH-1: SPACE-2/3 on the stream; time and packet decode at every position.

    A mapping built by m() is well-formed by construction (docs/mapping-language.md); what can still
    fail is a position that overshoots its axis (docs/mapping-language.md), which leaves the mapping
    without a factor form. Digits placed twice across levels are FETCH-7's."""
    c = constants()
    for found in (levels.cluster(out.cluster, c.CLUSTER_SIZES), levels.slice_(out.slice, c.SLICE_SIZES)):
        if found is not None:
            return Violation("FETCH-1", found.message,
                             notes=(f"{found.code} (docs/machine/index.md predicate {found.predicate})",))
    for name, mp in (("time", time), ("packet", packet)):
        try:
            mp.factors()
        except MappingError as e:
            return Violation("FETCH-1", f"the fetch {name} `{mp}` is not a well-formed stream mapping",
                             label=f"some positions of `{mp}` decode outside their axes",
                             notes=(e.detail.splitlines()[0],),
                             help="place each digit of an axis once, e.g. `A / 8, A % 8` rather than `A, A`")
    return None


def _fetch_placed(src: StreamType, time: Mapping, packet: Mapping) -> Violation | None:
    """FETCH-2: `sequence([Tin, Pin], [time, packet])` succeeds."""
    plan = match_read(src.time, src.packet, time, packet)
    if isinstance(plan, ReadPlan):
        return None
    return Violation("FETCH-2", f"the fetch cannot place ({time} ; {packet}) on the input ({src.time} ; {src.packet})",
                     label=plan.reason,
                     notes=("every output fragment of an axis the input holds must be a digit range of "
                            "the input's decomposition, inside the axis extent",),
                     help=f"split the axes along the input's own digits, e.g. the DM element `{src.packet}`")


def _fetch_3(src: StreamType, time: Mapping, packet: Mapping) -> Violation | None:
    """FETCH-3: every live input fragment occurs in the output."""
    try:
        gaps = unread_fragments((src.time, src.packet), (time, packet))
    except MappingError as e:
        return Violation("FETCH-3", "the fetch input has no factor form, so its coverage cannot be checked",
                         label=e.detail.splitlines()[0])
    if not gaps:
        return None
    sizes = axis_sizes(src.time, src.packet)
    text = ", ".join(f"`{frag_text(g, sizes.get(g.axis))}`" for g in gaps)
    return Violation("FETCH-3", f"the fetch leaves part of its input unread: {text} is never read",
                     label=f"({time} ; {packet}) does not cover {text} of the input `{src.packet}`",
                     notes=("reading part of a tensor needs a tile view (later scope)",),
                     help=f"add {text} to the fetch time or packet")


def _fetch_plan_limits(plan: ReadPlan) -> Violation | None:
    """FETCH-4 (entry count) and FETCH-5 (entry size) on the coalesced read plan."""
    count = len(plan.entries)
    if count > SEQ_MAX_ENTRIES:
        return Violation("FETCH-4", f"the read plan needs {count} sequencer entries; the Fetch sequencer has "
                         f"{SEQ_MAX_ENTRIES}",
                         label=f"read plan {plan} ({len(plan.time_entries)} time + "
                               f"{len(plan.packet_entries)} packet entries after coalescing)",
                         notes=("docs/machine/index.md predicate SEQ",),
                         help="keep neighbouring digits in DM order so entries coalesce, or move digits "
                              "from time into the packet")
    big = next((e for e in plan.entries if e.size > SEQ_MAX_ITER), None)
    if big is not None:
        return Violation("FETCH-5", f"a read-plan entry of {big.size} iterations exceeds {SEQ_MAX_ITER}",
                         label=f"entry [{big.size} : {big.stride}] of the read plan {plan}",
                         notes=("docs/machine/index.md predicate SEQ",),
                         help="move part of that factor into the packet (or the packet's into time), so "
                              f"that no loop runs more than {SEQ_MAX_ITER} times")
    return None


def _fetch_6(dtype: DType, packet: Mapping) -> Violation | None:
    """FETCH-6: bytes(packet, D) is an integer."""
    if packet.size * dtype.bits % 8 == 0:
        return None
    return Violation("FETCH-6", "the fetch packet is not a whole number of bytes",
                     label=f"packet is {bytes_text(packet.size, dtype)}",
                     help=f"use an even number of {dtype} elements per packet")


def _fetch_7(src: StreamType, time: Mapping, packet: Mapping) -> Violation | None:
    """FETCH-7: `[Chip, Cluster, Slice, time, packet]` places no digit of an axis twice."""
    try:
        twice = places_digit_twice(src.chip, src.cluster, src.slice, time, packet)
    except MappingError as e:
        return Violation("FETCH-7", "a spatial mapping of the stream has no factor form",
                         label=e.detail.splitlines()[0])
    if twice is None:
        return None
    a, b = twice
    sizes = axis_sizes(src.chip, src.cluster, src.slice, time, packet)
    named = (("Chip", src.chip), ("Cluster", src.cluster), ("Slice", src.slice), ("time", time), ("packet", packet))
    names_a = holding(a, named) or ["?"]
    names_b = [n for n in holding(b, named) if a != b or n != names_a[0]] or ["?"]
    ta, tb = frag_text(a, sizes.get(a.axis)), frag_text(b, sizes.get(b.axis))
    return Violation("FETCH-7", f"the fetch places digits of {a.axis} twice: `{tb}` in {names_b[0]} "
                     f"is already placed by {names_a[0]} `{ta}`",
                     label=f"`{tb}` overlaps `{ta}`",
                     notes=("within one slice the move would be undefined for some positions",),
                     help=f"drop `{tb}` from the fetch {names_b[0]}" if names_b[0] in ("time", "packet")
                     else "place each digit of an axis in one level only")


def _fetch_access(src: StreamType, plan: ReadPlan) -> Violation | None:
    """FETCH-8 (sub context: 8-byte reads) and FETCH-10 (4-bit sources: contiguous pairs)."""
    d = src.dtype
    inner = plan.innermost_packet
    if src.context == SUB and (inner.stride not in (0, 1) or inner.size * d.bits % (8 * SUB_ACCESS_BYTES)):
        want = 8 * SUB_ACCESS_BYTES // d.bits
        why = (f"its innermost packet entry [{inner.size} : {inner.stride}] reads elements "
               f"{inner.stride} apart" if inner.stride not in (0, 1)
               else f"the innermost packet run is {bytes_text(inner.size, d)}")
        return Violation("FETCH-8", f"the sub context reads exactly {SUB_ACCESS_BYTES} bytes per DM access, "
                         "but this fetch packet cannot be read that way",
                         label=why,
                         notes=(f"read plan {plan}",),
                         help=f"make the innermost packet run a multiple of {want} contiguous {d} elements "
                              f"({SUB_ACCESS_BYTES} bytes), or run the stream in ctx.main")
    if d in _FOUR_BIT and (inner.stride != 1 or inner.size % 2):
        why = (f"packet entry [{inner.size} : {inner.stride}]: nibbles {inner.stride} apart"
               if inner.stride != 1 else f"packet entry [{inner.size} : 1] has an odd length")
        return Violation("FETCH-10", f"a packet of 4-bit {d} must be read as contiguous pairs of elements "
                         "(one DM access is at least one byte)",
                         label=why,
                         notes=(f"read plan {plan}",),
                         help=f"make the innermost packet factor contiguous in DM with an even count, "
                              f"e.g. the DM element's innermost axis")
    return None


# --- the fetch adapter (docs/machine/fetch-adapter.md) ----------------------------------------------------


def _names(types: list[DType]) -> str:
    return ", ".join(str(t) for t in types)


def check_table_lookup(op) -> Violation | None:
    """FLUT-1, then CTX-3 (main context only)."""
    src, d2 = op.input.type, op.dtype
    if (src.dtype, d2) not in TABLE_LOOKUPS:
        targets = [b for (a, b) in TABLE_LOOKUPS if a == src.dtype]
        hint = (f"the legal lookups from {src.dtype} are to {_names(targets)}" if targets
                else f"no table lookup starts from {src.dtype}; lookups decode f4e2m1 -> f8e4m3/f8e5m2 "
                     "and f8e4m3/f8e5m2 -> bf16")
        if (src.dtype, d2) in FETCH_CASTS:
            hint += f"; {src.dtype} -> {d2} is a fetch_cast"
        return Violation("FLUT-1", f"{src.dtype} -> {d2} is not a Fetch Adapter table lookup",
                         label=f"no decode table from {src.dtype} to {d2}", help=hint)
    if src.context != MAIN:
        return Violation("CTX-3", f"`fetch_table_lookup` requires a main stream; this stream runs in ctx.{src.context}",
                         label="the sub context has no lookup tables",
                         help="begin the stream on ctx.main")
    return None


def check_fetch_cast(op) -> Violation | None:
    """FCAST-1, then FETCH-9 (sub context: widening ratio at most 4)."""
    src, d2 = op.input.type, op.dtype
    d = src.dtype
    legal = d == d2 and d.materializable or (d, d2) in FETCH_CASTS
    if not legal:
        targets = ([d] if d.materializable else []) + [b for (a, b) in FETCH_CASTS if a == d]
        hint = f"the legal fetch_cast targets for {d} are {_names(targets)}"
        if (d, d2) in TABLE_LOOKUPS:
            hint += f"; {d} -> {d2} is a table lookup: use .fetch_table_lookup({d2})"
        elif d2.bits < d.bits:
            hint += "; narrow after the contraction with .cast(...)"
        return Violation("FCAST-1", f"{d} -> {d2} is not a Fetch Adapter cast",
                         label=f"fetch_cast cannot convert {d} to {d2}", help=hint)
    ratio = d2.bits / d.bits
    if src.context == SUB and ratio > 4:
        return Violation("FETCH-9", f"in ctx.sub a fetch_cast may widen at most 4x; {d} -> {d2} widens "
                         f"{d2.bits // d.bits}x",
                         label=f"the {SUB_ACCESS_BYTES} bytes read would become "
                               f"{int(SUB_ACCESS_BYTES * ratio)} bytes (> 32)",
                         help="run the stream in ctx.main")
    return None


def check_zero_point_sub(op) -> Violation | None:
    """FZPS-1 (the pair), then FZPS-2 (the zero point lies in the source range)."""
    d, d2, zp = op.input.type.dtype, op.dtype, op.zero_point
    rng = ZERO_POINT_SUBS.get((d, d2))
    if rng is None:
        legal = ", ".join(f"{a} -> {b}" for a, b in ZERO_POINT_SUBS)
        own = [b for a, b in ZERO_POINT_SUBS if a == d]
        return Violation("FZPS-1", f"{d} -> {d2} is not a zero-point subtraction",
                         label=f"fetch_zero_point_sub takes {legal}",
                         help=f"use .fetch_zero_point_sub({own[0]}, zero_point)" if own
                         else "zero-point subtraction applies to i4 and i8 streams only")
    lo, hi = rng
    if not lo <= zp <= hi:
        return Violation("FZPS-2", f"zero point {zp} is outside the {d} range [{lo}, {hi}]",
                         label=f"zero_point = {zp}",
                         help=f"pass a zero point between {lo} and {hi}")
    return None
