"""Derived quantities of the Contraction Engine (docs/machine/contraction.md), shared by rules, lowering and cpu.

Pure functions on types and mappings, each returning a small frozen record: the stream
adapter and TRF sequencer of `contract_outer` (9.1), the packet-reducer depth (9.2) and the
lane-folder geometry (9.4); the time-reducer loops (9.3) are `ir.rules.time_reduction`'s.
They assume the rules of `ir.rules.contract_outer` and `ir.rules.contract_reducers` hold
and raise ValueError where a quantity is undefined; everything works on factor forms,
never on cell tables of large mappings.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ir.dtypes import DType
from ir.errors import MappingError
from ir.mapping import ops as mops
from ir.mapping.factors import Factor, PaddingFactor, RaggedFactor, canon, factor_mapping
from ir.mapping.levels import FLIT_BYTES
from ir.mapping.nodes import Mapping, PaddingKind, axis_sizes, pair_all
from ir.mapping.ops import Entry
from ir.types import CStreamType, LaneMode, StreamType, TrfType
from ir.memo import memo
from ir.rules.commit_plan import SEQ_MAX_ENTRIES, SEQ_MAX_ITER
from ir.rules.contract_text import raw

__all__ = [
    "FLIT_BYTES", "OUTER_PACKET_BYTES", "TRF_READ_BYTES", "NARROW_READ_BYTES", "ACC_COLS",
    "ACC_CELLS", "LANE_BUS", "LANES", "SEQ_MAX_ENTRIES", "SEQ_MAX_ITER",
    "OuterGeometry", "LaneGeometry",
    "split_normalized", "split_to_factors", "split_mappings", "mapping_of", "factor_mapping", "padded_factors",
    "divide_rows", "walk_entries", "lane_fold_f", "outer_pack", "trf_read_size", "outer_geometry",
    "packet_depth", "reduced_packet",
    "lane_fold", "lane_geometry", "accumulator_cells", "text_of", "axis_sizes",
]

OUTER_PACKET_BYTES = (32, 64)
TRF_READ_BYTES = 64
NARROW_READ_BYTES = 32
ACC_COLS = 32
ACC_CELLS = 1024
LANE_BUS = 8
LANES = (1, 2, 4, 8)


def _norm(mapping: Mapping) -> Mapping:
    """A canonical equivalent mapping (for records and messages); the mapping itself if
    normalizing is impossible."""
    try:
        return mapping.normalize()
    except MappingError:
        return mapping


def split_normalized(mapping: Mapping, n: int) -> tuple[Mapping, Mapping]:
    """`split(M, n)` = (outer, inner), normalized. MappingError unless n divides size(M)."""
    outer, inner = mops.split(mapping, n)
    return _norm(outer), _norm(inner)


Factors = tuple[Factor, ...]


def split_to_factors(mapping: Mapping, n: int) -> tuple[Factors, Factors]:
    """`split(M, n)` on the canonical factor form: (factors(outer), factors(inner)), cut
    structurally; only a cut inside a ragged piece evaluates cells. MappingError unless n
    divides size(M)."""
    got = mops.split_factors(mapping.factors(), n)
    if got is not None:
        return tuple(got[0]), tuple(got[1])
    outer, inner = mops.split(mapping, n)
    return outer.factors(), inner.factors()


def mapping_of(fs: Sequence[Factor], fallback: Mapping) -> Mapping:
    """A mapping with factor form `fs`, rendered factor by factor; `fallback` (an equivalent
    mapping, normalized) when a ragged piece is involved."""
    if any(isinstance(f, RaggedFactor) for f in fs):
        return _norm(fallback)
    return pair_all([factor_mapping(f) for f in fs])


def split_mappings(mapping: Mapping, n: int) -> tuple[Mapping, Mapping]:
    """`split(M, n)` as two canonical mappings, built from the factor form."""
    fo, fi = split_to_factors(mapping, n)
    outer, inner = mops.split(mapping, n)
    return mapping_of(fo, outer), mapping_of(fi, inner)


def padded_factors(mapping: Mapping, n: int) -> Factors:
    """factors(pad(M, n)): a Top `PaddingFactor` outermost when size(M) divides n."""
    if n == mapping.size:
        return mapping.factors()
    if n % mapping.size == 0:
        return tuple(canon([PaddingFactor(PaddingKind.TOP, n // mapping.size), *mapping.factors()]))
    return mapping.pad(n).factors()


def text_of(mapping: Mapping) -> str:
    """The text of a mapping as written inside m("..."): canonical, no outer parentheses."""
    return raw(_norm(mapping))


# --- 9.1 contract_outer --------------------------------------------------------------------


@attrs.frozen
class OuterGeometry:
    """Stream adapter and TRF sequencer of one `contract_outer` (docs/machine/contraction.md).

    `trf_walk` has one entry per factor of out_time (in a refinement common with E_outer),
    coalesced: stride in TRF reads, 0 for a TRF broadcast."""

    pack: int
    flit_elems: int
    tiling: int
    ot_bcast: Mapping
    read_size: int
    read_bits: int
    op_bcast: Mapping
    trf_walk: tuple[Entry, ...]
    lanes: int

    @property
    def wide(self) -> bool:
        """A read of more than 32 bytes uses both TRF banks."""
        return self.read_bits > NARROW_READ_BYTES * 8

    @property
    def width(self) -> str:
        return "WIDE" if self.wide else "NARROW"

    @property
    def time_broadcast(self) -> tuple[int, ...]:
        """Sizes of the factors of OT_bcast, outer to inner (ContractOuter.time_broadcast)."""
        return tuple(f.extent for f in self.ot_bcast.factors())

    @property
    def packet_broadcast(self) -> int:
        """size(OP_bcast): how often each TRF read is replicated across the packet."""
        return self.op_bcast.size


def outer_pack(dtype: DType, out_packet: Mapping) -> int:
    """pack = bytes(out_packet, D) / 32 (1 or 2); ValueError for any other size (OUTER-3)."""
    bits = out_packet.size * dtype.bits
    if bits % (8 * FLIT_BYTES) or bits // 8 not in OUTER_PACKET_BYTES:
        raise ValueError(f"out_packet of {out_packet.size} x {dtype} is not 32 or 64 bytes")
    return bits // (8 * FLIT_BYTES)


def trf_read_size(element: Mapping, out_packet: Mapping, weight: DType) -> int:
    """R: the largest power of two n dividing size(E), at most size(out_packet), with
    n * bits(Dw) <= 64 bytes and inner(split(E, n)) == inner(split(out_packet, n))."""
    best, n = 1, 2
    while element.size % n == 0 and out_packet.size % n == 0 and n * weight.bits <= TRF_READ_BYTES * 8:
        if split_to_factors(element, n)[1] != split_to_factors(out_packet, n)[1]:
            break
        best, n = n, n * 2
    return best


def divide_rows(out_time: Mapping, e_outer: Mapping | Factors) -> mops.DivideResult | None:
    """`divide(out_time, E_outer)` (OUTER-9): how out_time walks the TRF rows. When out_time
    does not walk a padding factor of E_outer (a row padded past the read, `K # 32` read 16
    at a time), the sequencer leaves that factor at its first value, a live row, and never
    reads the padding: out_time divides the live factors only, each stride still counted in
    reads of the whole E_outer. A walk that names the padding reads it, as before."""
    got = mops.divide(out_time, e_outer)
    fs = mops.as_factors(e_outer)
    if got is not None or not any(isinstance(f, PaddingFactor) for f in fs):
        return got
    got = mops.divide(out_time, tuple(f for f in fs if not isinstance(f, PaddingFactor)))
    if got is None:
        return None
    bands, live, whole = [], 1, 1  # per live factor: its strides [live, live * extent) scale by whole / live
    for f in reversed(fs):
        if not isinstance(f, PaddingFactor):
            bands.append((live, live * f.extent, whole // live))
            live *= f.extent
        whole *= f.extent

    def in_reads(stride: int) -> int:
        return next(stride * k for lo, hi, k in bands if lo <= stride < hi)

    return mops.DivideResult(tuple(attrs.evolve(lp, stride_n=in_reads(lp.stride_n)) if lp.kept else lp
                                   for lp in got.loops))


def walk_entries(got: mops.DivideResult) -> tuple[Entry, ...]:
    """The TRF read walk (OUTER-11) before coalescing, of a successful `divide(out_time, E_outer)`
    (OUTER-9): one entry per factor of a refinement of out_time common with E_outer, its stride
    in E_outer (= in reads) or 0 when the factor is not a TRF factor."""
    return tuple(Entry(lp.factor.extent, lp.stride_n if lp.kept else 0) for lp in got.loops)


@memo()
def outer_geometry(stream_type: StreamType, trf_type: TrfType, out_time: Mapping,
                   out_packet: Mapping) -> OuterGeometry:
    """Every derived quantity of `contract_outer` (docs/machine/contraction.md) for a call that passes
    OUTER-1..11; ValueError where a quantity is undefined."""
    d = stream_type.dtype
    try:
        pack = outer_pack(d, out_packet)
        t_outer = split_mappings(stream_type.time, pack)[0]
        if out_time.size % t_outer.size:
            raise ValueError(f"size(out_time) {out_time.size} is not a multiple of size(T_outer) {t_outer.size}")
        tiling = out_time.size // t_outer.size
        ot_bcast = split_mappings(out_time, tiling)[1]
        r = trf_read_size(trf_type.element, out_packet, trf_type.dtype)
        e_outer = split_mappings(trf_type.element, r)[0]
        op_bcast = split_mappings(out_packet, r)[0]
        got = divide_rows(out_time, e_outer)
    except MappingError as e:
        raise ValueError(f"contract_outer geometry is undefined: {e}") from e
    if got is None:
        raise ValueError(f"out_time `{out_time}` does not walk the TRF rows `{e_outer}`")
    return OuterGeometry(
        pack=pack, flit_elems=d.flit_elems, tiling=tiling, ot_bcast=ot_bcast, read_size=r,
        read_bits=r * trf_type.dtype.bits, op_bcast=op_bcast, trf_walk=mops.coalesce(walk_entries(got)),
        lanes=trf_type.lane.size)


# --- 9.2 contract_packet -------------------------------------------------------------------


def reduced_packet(packet: Mapping, d: int) -> Mapping:
    """outer(split(P, 2^d)): what the adder tree of depth d leaves of the packet."""
    return split_mappings(packet, 2 ** d)[0]


@memo()
def packet_depth(packet: Mapping, out_packet: Mapping) -> int | None:
    """The smallest depth d with 2^d | size(P) and strip(outer(split(P, 2^d))) ==
    strip(out_packet) (PACKET-4); None when there is none."""
    try:
        want = mops.strip_factors(out_packet)
        d = 0
        while packet.size % (2 ** d) == 0:
            if mops.strip_factors(split_to_factors(packet, 2 ** d)[0]) == want:
                return d
            d += 1
    except MappingError:
        return None
    return None


# --- 9.4 contract_lane ---------------------------------------------------------------------


@attrs.frozen
class LaneGeometry:
    """The Lane Folder of one `contract_lane` (docs/machine/contraction.md LaneFold)."""

    mode: LaneMode
    lanes: int
    cols: int
    f: Mapping
    expected_packet: Mapping
    ot_outer: Mapping
    ot_inner: Mapping

    @property
    def cycles(self) -> int:
        """Output cycles per pass: size(T) * size(F) = size(out_time) (LFOLD-3)."""
        return self.ot_outer.size * self.ot_inner.size


def accumulator_cells(mode: LaneMode, lanes: int, cols: int, it: int) -> int:
    """Accumulator cells used (LANE-6): 8 * IT * cols interleaved, lanes * IT * 32 *
    ceil(cols / 32) sequential."""
    if mode is LaneMode.INTERLEAVED:
        return LANE_BUS * it * cols
    return lanes * it * ACC_COLS * -(-cols // ACC_COLS)


def lane_fold_f(lane: Mapping, packet: Mapping, mode: LaneMode) -> tuple[Factors, Factors]:
    """factors(F) and factors(expected out_packet) of the mode: INTERLEAVED F = P, packet
    pad(L, 8); SEQUENTIAL F = [L, P_hi], packet P_lo, (P_hi, P_lo) = split(pad(P, 8k), 8).
    MappingError when the lane has more than 8 positions."""
    if mode is LaneMode.INTERLEAVED:
        return packet.factors(), padded_factors(lane, LANE_BUS)
    n = LANE_BUS * -(-packet.size // LANE_BUS)
    padded = padded_factors(packet, n)
    got = mops.split_factors(padded, LANE_BUS)
    if got is None:
        p_hi, p_lo = (x.factors() for x in mops.split(packet.pad(n) if n > packet.size else packet, LANE_BUS))
    else:
        p_hi, p_lo = tuple(got[0]), tuple(got[1])
    return tuple(canon([*lane.factors(), *p_hi])), p_lo


def lane_fold(lane: Mapping, packet: Mapping, mode: LaneMode) -> tuple[Mapping, Mapping]:
    """(F, expected out_packet) of the mode as canonical mappings (see `lane_fold_f`)."""
    f, expected = lane_fold_f(lane, packet, mode)
    if mode is LaneMode.INTERLEAVED:
        return mapping_of(f, packet), mapping_of(expected, lane.pad(LANE_BUS))
    n = LANE_BUS * -(-packet.size // LANE_BUS)
    p_hi, p_lo = mops.split(packet.pad(n) if n > packet.size else packet, LANE_BUS)
    return mapping_of(f, pair_all([lane, p_hi])), mapping_of(expected, p_lo)


@memo()
def lane_geometry(cstream_type: CStreamType, out_time: Mapping, out_packet: Mapping,
                  mode: LaneMode) -> LaneGeometry:
    """Every derived quantity of `contract_lane` (docs/machine/contraction.md): F, the expected packet,
    and (OT_outer, OT_inner) = split(out_time, size(F)).
    ValueError when size(F) does not divide size(out_time)."""
    t = cstream_type
    try:
        f, expected = lane_fold(t.lane, t.packet, mode)
        ot_outer, ot_inner = split_mappings(out_time, f.size)
    except MappingError as e:
        raise ValueError(f"contract_lane geometry is undefined: {e}") from e
    return LaneGeometry(mode, t.lane.size, t.packet.size, f, expected, ot_outer, ot_inner)
