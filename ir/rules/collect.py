"""Collect and TRF rules (docs/machine/collect.md): COLLECT-1..5, TRF-1..6, and the `to_trf` defaults (3.2).

Also the derived quantities the lowering reads: the collect plan (`collect_plan`: B, Pp,
Pouter, Pflit) and the TRF load geometry (`trf_geometry`). TRF-7 itself is raised by the
DSL (npu_opt/stages.py), from the values `infer_trf` returns.
"""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.dtypes import TRF_STORAGE, DType
from ir.errors import MappingError
from ir.machine import constants
from ir.mapping.factors import Factor, RaggedFactor, canon, factor_mapping, factor_size, short_text
from ir.mapping.nodes import IDENTITY, Mapping, Pair, Resize, pair_all, written
from ir.mapping.ops import axes_of, factor_frags, places_digit_twice, split, split_factors
from ir.rules.contract_geometry import FLIT_BYTES, LANES, _norm
from ir.rules.contract_text import raw
from ir.rules.fetch import axis_sizes, bytes_text, frag_text
from ir.types import StreamType
from ir.words import a_an

__all__ = [
    "check_collect", "check_to_trf", "infer_trf", "CollectPlan", "collect_plan", "TrfGeometry",
    "trf_geometry", "FLIT_BYTES", "PACKET_ALIGN", "LANES",
]

PACKET_ALIGN = 8


def _mapping_of(factors: list[Factor] | tuple[Factor, ...]) -> Mapping | None:
    """A mapping whose canonical factor form is `canon(factors)`, built without evaluating
    cells; None when a ragged (`RaggedFactor`) piece is involved (then the caller uses mapping ops)."""
    items: list[Mapping] = []
    for f in canon(list(factors)):
        if isinstance(f, RaggedFactor):
            return None
        items.append(factor_mapping(f))
    return pair_all(items)


def _same(mp: Mapping, factors: tuple[Factor, ...] | None, fallback: Mapping) -> bool:
    """`mp ≡ fallback`, where `factors` (when known) is a factor list describing `fallback`.

    Equal canonical RaggedFactor-free lists describe the same cells, so they accept without building
    the fallback's factor form (which would tabulate it); anything else is decided on the
    mappings themselves."""
    try:
        if factors is not None and not any(isinstance(f, RaggedFactor) for f in factors) \
                and mp.size == factor_size(factors) and mp.factors() == tuple(canon(list(factors))):
            return True
    except MappingError:
        return False
    return mp.matches(fallback)


def _split_known(mp: Mapping, n: int) -> tuple[tuple[Factor, ...], tuple[Factor, ...]] | None:
    """split(M, n) on M's factor list, or None when it needs the mapping ops."""
    try:
        return split_factors(mp.factors(), n)
    except MappingError:
        return None


# --- collect (docs/machine/collect.md) ------------------------------------------------------------


@attrs.frozen
class CollectPlan:
    """Derived values of `collect` on a stream `(T ; P)` of dtype D (docs/machine/collect.md).

    `packet_bytes` = bytes(P, D); `padded` = pad(P, ceil(packet_bytes / 32) * 32 * 8 /
    bits(D)); `(outer, flit)` = split(padded, flit_elems(D)); `time2 = [T, outer]` and
    `flit` are the only legal collect arguments (up to ≡). `flits` = size(outer)
    is the FeedBuffer's `flits_per_packet`."""

    packet_bytes: int
    padded: Mapping
    outer: Mapping
    flit: Mapping
    time2: Mapping

    @property
    def flits(self) -> int:
        return self.outer.size


def collect_plan(dtype: DType, time: Mapping, packet: Mapping) -> CollectPlan | None:
    """The collect plan of a stream `(time ; packet)` of `dtype`, or None when
    `bytes(packet, dtype)` is not a whole number (then COLLECT-1 refuses).

    `i8` packet `K` (`K = 64`) gives Pouter ≡ `K / 32`, Pflit ≡ `K % 32`; `i8` packet `B`
    (`B = 16`) gives Pp = `B # 32`, Pouter = 1, Pflit = `B # 32`."""
    total = packet.size * dtype.bits
    if total % 8:
        return None
    b = total // 8
    flits = -(-b // FLIT_BYTES)
    n = flits * FLIT_BYTES * 8 // dtype.bits
    padded = packet if n == packet.size else packet.pad(n)
    outer, flit = split(padded, dtype.flit_elems)
    time2 = time if outer == IDENTITY else (outer if time == IDENTITY else Pair(time, outer))
    return CollectPlan(b, padded, outer, flit, time2)


def check_collect(op) -> Violation | None:
    """COLLECT-1..5 for a Collect op, first failure wins."""
    src: StreamType = op.input.type
    d = src.dtype
    time2, packet2 = op.time, op.packet
    plan = collect_plan(d, src.time, src.packet)
    if plan is None or plan.packet_bytes % PACKET_ALIGN:
        return Violation("COLLECT-1", f"the packet reaching collect must be a positive multiple of "
                         f"{PACKET_ALIGN} bytes",
                         label=f"packet `{src.packet}` is {bytes_text(src.packet.size, d)}",
                         notes=("docs/machine/index.md predicate PKT-ALIGN",),
                         help=f"fetch a packet of a multiple of {PACKET_ALIGN * 8 // d.bits} {d} elements")
    if packet2.size * d.bits != FLIT_BYTES * 8:
        return Violation("COLLECT-2", f"collect packet must be exactly one {FLIT_BYTES}-byte flit",
                         label=f"packet is {bytes_text(packet2.size, d)}",
                         notes=("docs/machine/index.md predicate PKT-FLIT",),
                         help=f"use m(\"{written(short_text(plan.flit))}\") for {a_an(d)} stream: {_collect_fix(plan)}")
    known = _split_known(src.packet, d.flit_elems) if plan.padded is src.packet else None
    if not _same(packet2, None if known is None else known[1], plan.flit):
        return Violation("COLLECT-3", "the collect packet is not the stream's first flit",
                         label=f"`{packet2}` is not `{short_text(plan.flit)}`",
                         notes=(f"the input packet `{src.packet}` padded to whole flits is "
                                f"`{short_text(plan.padded)}`; each flit holds its {d.flit_elems} innermost cells",),
                         help=f"use {_collect_fix(plan)}")
    time_factors = None if known is None else _joined(src.time, known[0])
    if not _same(time2, time_factors, plan.time2):
        return Violation("COLLECT-4", "the collect time must be the input time followed by the flit count",
                         label=f"`{time2}` is not `{short_text(plan.time2)}`",
                         notes=(f"[T, Pouter] with T = `{src.time}` and Pouter = `{short_text(plan.outer)}`",),
                         help=f"use {_collect_fix(plan)}")
    try:
        twice = places_digit_twice(src.chip, src.cluster, src.slice, time2, packet2)
    except MappingError as e:
        return Violation("COLLECT-5", "a mapping of the collect has no factor form",
                         label=e.detail.splitlines()[0])
    if twice is not None:
        a, b = twice
        sizes = axis_sizes(src.chip, src.cluster, src.slice, time2, packet2)
        return Violation("COLLECT-5", f"the collect places digits of {a.axis} twice",
                         label=f"`{frag_text(b, sizes.get(b.axis))}` overlaps `{frag_text(a, sizes.get(a.axis))}`",
                         help="place each digit of an axis in one level only")
    return None


def _joined(*parts: Mapping | tuple[Factor, ...]) -> tuple[Factor, ...] | None:
    """The factor list of `[parts...]` (mappings or factor lists) when each mapping's factors are known, else None."""
    try:
        return tuple(f for p in parts for f in (p.factors() if isinstance(p, Mapping) else p))
    except MappingError:
        return None


def _collect_fix(plan: CollectPlan) -> str:
    return f'.collect(m("{written(short_text(plan.time2))}"), m("{written(short_text(plan.flit))}"))'


# --- to_trf (docs/machine/collect.md) -------------------------------------------------------------


@attrs.frozen
class TrfGeometry:
    """How a collected stream `(T ; P)` fills the TRF as `(lane, element)` (docs/machine/collect.md).

    `bytes_per_lane` is bytes(element, D) rounded up to 32-byte rows (the TrfLoad field);
    `collect_flits` is 2 when `bytes_per_lane` is a multiple of 64 (rows written as bank
    pairs, TRFLD-4), else 1."""

    lanes: int
    bytes_per_lane: int
    collect_flits: int


def trf_geometry(dtype: DType, time: Mapping, lane: Mapping, element: Mapping) -> TrfGeometry | None:
    """The TRF load geometry, or None when `size(lane)` does not divide `size(time)` or the
    element is not whole bytes (TRF-3 / TRF-2 refuse those)."""
    total = element.size * dtype.bits
    if time.size % lane.size or total % 8:
        return None
    per_lane = -(-(total // 8) // FLIT_BYTES) * FLIT_BYTES
    return TrfGeometry(lane.size, per_lane, 2 if per_lane % 64 == 0 else 1)


def infer_trf(time: Mapping, packet: Mapping, lane: Mapping | None) -> tuple[Mapping, Mapping]:
    """Default `(lane, element)` of `to_trf` (docs/porting.md); `lane` when given is kept and
    only the element is inferred from it.

    The lane is the longest prefix of the canonical factors of `time` whose size is in
    LANES and which shares no axis with `packet` (`m("1")` for the empty prefix); the
    element is `[inner(split(time, size(time) / size(lane))), packet]`, both returned in
    canonical form. GEMM's `(J % 8, J / 8 % 4, K / 16 ; K % 16)` gives lane `J % 8`, element
    `J / 8 % 4, K`. Never raises: a lane that does not divide the time gets the element
    `[time = k, packet]` with `k = ceil(size(time) / size(lane))`, which TRF-3 refuses."""
    if lane is None:
        lane = _infer_lane(time, packet)
    if time.size % lane.size:
        k = -(-time.size // lane.size)
        return lane, pair_all([Resize(time, k), packet])
    n = time.size // lane.size
    known = _split_known(time, n)
    if known is not None:
        try:
            element = _mapping_of(known[1] + tuple(packet.factors()))
        except MappingError:
            element = None
        if element is not None:
            return lane, element
    _, inner = split(time, n)
    return lane, _norm(pair_all([inner, packet]))


def _infer_lane(time: Mapping, packet: Mapping) -> Mapping:
    try:
        factors = time.factors()
        packet_axes = axes_of(packet)
    except MappingError:
        return IDENTITY
    best, size = 0, 1
    for i, f in enumerate(factors):
        size *= f.extent
        if size > max(LANES):
            break
        if size in LANES and not any(fr.axis in packet_axes for f in factors[:i + 1] for fr in factor_frags(f)):
            best = i + 1
    if best == 0:
        return IDENTITY
    lane = _mapping_of(factors[:best])
    return lane if lane is not None else _norm(split(time, time.size // factor_size(factors[:best]))[0])


def check_to_trf(op) -> Violation | None:
    """TRF-1..6 for a ToTrf op, first failure wins (TRF-7 is the DSL's)."""
    src: StreamType = op.input.type
    d, lane, element = src.dtype, op.lane, op.element
    time, packet = src.time, src.packet
    if lane.size not in LANES:
        return Violation("TRF-1", f"a TRF tensor has 1, 2, 4 or 8 lanes, not {lane.size}",
                         label=f"lane `{lane}` has size {lane.size}",
                         notes=("docs/machine/index.md predicate TRF-LANE",),
                         help=_trf_help(time, packet))
    total_bits = element.size * d.bits
    if total_bits % 8:
        return Violation("TRF-2", "the TRF element is not a whole number of bytes",
                         label=f"element is {bytes_text(element.size, d)}",
                         notes=("docs/machine/index.md predicate TRF-CAP",),
                         help=_trf_help(time, packet))
    per_lane = total_bits // 8
    trf_bytes = constants().TRF_BYTES
    if lane.size * per_lane > trf_bytes:
        total = lane.size * per_lane
        return Violation("TRF-2", f"the TRF tensor does not fit: {total} bytes = {lane.size} lanes x "
                         f"{per_lane} bytes > {trf_bytes}",
                         label=f"{lane.size} lanes x {per_lane} bytes = {total} bytes > {trf_bytes} bytes",
                         notes=("docs/machine/index.md predicate TRF-CAP",
                                f"the TRF holds {trf_bytes} bytes per slice ({trf_bytes // 8} per lane with 8 lanes)"),
                         help="load a smaller tile per slice (spread more of the tensor over Slice) "
                              "or split it into several TRF loads")
    if time.size % lane.size:
        return Violation("TRF-3", f"the lane count {lane.size} does not divide the {time.size} time steps",
                         label=f"time `{time}` has {time.size} steps",
                         notes=("docs/machine/index.md predicate TRF-LOAD",),
                         help=_trf_help(time, packet))
    outer, inner = split(time, time.size // lane.size)
    known = _split_known(time, time.size // lane.size)
    if not _same(lane, None if known is None else known[0], outer):
        return Violation("TRF-4", "the lane must be the outer part of the stream time",
                         label=f"`{lane}` is not the outer {lane.size} steps `{short_text(outer)}` of `{time}`",
                         notes=("docs/machine/index.md predicate TRF-LOAD",),
                         help=_trf_help(time, packet))
    want = pair_all([inner, packet])
    if not _same(element, None if known is None else _joined(known[1], packet), want):
        return Violation("TRF-5", "the TRF element must be the inner time followed by the packet",
                         label=f"`{element}` is not `{short_text(want)}`",
                         notes=("docs/machine/index.md predicate TRF-LOAD",),
                         help=f'use .to_trf(m("{written(short_text(lane))}"), m("{written(short_text(want))}"))')
    if d not in TRF_STORAGE:
        names = ", ".join(sorted(str(t) for t in TRF_STORAGE))
        return Violation("TRF-6", f"the TRF cannot store {d}",
                         label=f"the stream is {d}", notes=(f"TRF storage types: {names}",),
                         help="load the weights in their storage type (cast before committing them to DM)")
    return None


def _trf_help(time: Mapping, packet: Mapping) -> str:
    lane, element = infer_trf(time, packet, None)
    return f'e.g. .to_trf(m("{raw(lane)}"), m("{raw(element)}")) (the inferred default)'
