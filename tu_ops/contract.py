"""The lowered Contraction Engine (docs/reference/diagnostics.md): ContractOuter, PacketReduce, TimeReduce, LaneFold.

Each verifier implements its family in order: COP-1 ... COP-7, PRED-1 ... PRED-3,
TRED-1 ... TRED-3, LFOLD-1 ... LFOLD-3.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs

from ir.rules.contract_geometry import lane_geometry, outer_geometry, packet_depth
from ir.rules.time_reduction import inner_time, time_reduction
from ir.types import LaneMode
from tu_ops.base import Derivation, Entry, Ref, TuOp, VerifyContext, attr, derived_of_types, entries_ok, operand, rule
from tu_ops.engines import (CONTRACTION, LANE_FOLDER, PACKET_REDUCER, TIME_REDUCER, Engine, Rate, ceil_div,
                            no_counters, stream_cycles)
from tu_ops.enums import CollectFlits, FeedElementType, LoopKind, TuContext, Width
from tu_ops.feed import as_entries
from ir.words import a_an

__all__ = ["TrfRead", "ContractOuter", "PacketReduce", "TimeLoop", "TimeReduce", "LaneFold",
           "inner_time"]


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


@attrs.frozen(kw_only=True)
class TrfRead:
    """The TRF sequencer of a ContractOuter: `R` elements per read, its width, the read walk
    (strides in reads, 0 = broadcast) and `size(OP_bcast)`."""

    TEXT_STYLE: ClassVar[str] = "struct"
    read_elems: int
    width: Width
    entries: tuple[Entry, ...] = attrs.field(converter=as_entries)
    packet_broadcast: int


@attrs.frozen(kw_only=True)
class ContractOuter(TuOp):
    """Multiply the fed stream by the TRF operand into a CStream of `mac_type`.

    Text: `%7 = contract_outer stream=%6 weights=%5 stream_type=RawInt8 weight_type=RawInt8
    mac_type=I32 pack_size=2 lanes=8 time_broadcast=[] trf_read={read_elems=64, width=WIDE,
    entries=[32:0, 8:1], packet_broadcast=1} : <stream> -> <cstream>`."""

    MNEMONIC: ClassVar[str] = "contract_outer"
    PIPELINE_RANK: ClassVar[int] = 30
    TRACED_STAGE: ClassVar[str | None] = "contract_outer"
    FEED_DEST: ClassVar[str | None] = "CONTRACT_OUTER"
    FEED_ELEMENTS: ClassVar[frozenset[Any]] = frozenset({
        FeedElementType.BF16, FeedElementType.RawInt8, FeedElementType.RawInt4, FeedElementType.Int9,
        FeedElementType.Int5, FeedElementType.F8E4M3, FeedElementType.F8E5M2,
    })
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("cstream",)
    ENGINE: ClassVar[Engine] = CONTRACTION
    FEED_PACKING: ClassVar[str | None] = "pack_size"

    stream: Ref = operand()
    weights: Ref = operand()
    stream_type: FeedElementType = attr()
    weight_type: FeedElementType = attr()
    mac_type: FeedElementType = attr()
    pack_size: int = attr()
    lanes: int = attr()
    time_broadcast: tuple[int, ...] = attr(converter=tuple)
    trf_read: TrfRead = attr()

    @classmethod
    def of_types(cls, result: Ref, stream: Ref, weights: Ref, s: Any, trf: Any, out: Any, loc: Any) -> ContractOuter:
        """Stream `s` times the TRF tensor of type `trf` into `out` (stream adapter, TRF sequencer)."""
        geo = outer_geometry(s, trf, out.time, out.packet)
        read = TrfRead(read_elems=geo.read_size, width=Width[geo.width], entries=geo.trf_walk,
                       packet_broadcast=geo.packet_broadcast)
        return cls(result=result, stream=stream, weights=weights, stream_type=FeedElementType.of(s.dtype),
                   weight_type=FeedElementType.of(trf.dtype), mac_type=FeedElementType.of(out.acc),
                   pack_size=geo.pack, lanes=geo.lanes, time_broadcast=geo.time_broadcast, trf_read=read,
                   input_type=s, output_type=out, loc=loc)

    def derived(self, at: Derivation) -> ContractOuter:
        if getattr(trf := at.types.get(self.weights.id), "kind", None) != "trf":
            raise ValueError(f"the weights {self.weights} are not a TRF tensor")
        return self.of_types(self.result, self.stream, self.weights, self.input_type, trf, self.output_type, self.loc)

    def busy_cycles(self, rate: Rate, target: Any) -> int:
        """One output packet per cycle (its MACs, lanes x packet per step, run in parallel)."""
        return ceil_div(self.output_type.time.size, rate("tensor_unit", "packets_per_cycle"))

    def cost_counters(self, target: Any) -> dict[str, int]:
        return {"mac_ops": self.lanes * self.output_type.time.size * self.output_type.packet.size}

    @rule("COP-1")
    def _cop_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        s, w = self.stream_type.dtype, self.weight_type.dtype
        entry = target.mac_entry(s, w)
        if entry is None:
            return f"{self.stream_type} x {self.weight_type} is not a Multiplier pair"
        if not entry.native:
            return f"{self.stream_type} x {self.weight_type} is emulated on {target.name}, not native"
        if self.mac_type.dtype != entry.acc:
            return f"{self.stream_type} x {self.weight_type} accumulates in {FeedElementType.of(entry.acc)}, not {self.mac_type}"
        if self.input_type.dtype != s or self.output_type.dtype != s or self.output_type.acc != entry.acc:
            return "stream_type / mac_type differ from the stream and cstream types"
        return None

    @rule("COP-2")
    def _cop_2(self, target: Any, ctx: VerifyContext | None) -> str | None:
        program = ctx.program_of(self.result) if ctx is not None else None
        context = program.context if program is not None else TuContext(self.input_type.context)
        if context is not TuContext.MAIN:
            return f"the {context} context has no Contraction Engine"
        return None

    @rule("COP-3")
    def _cop_3(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.pack_size not in [f.value for f in CollectFlits]:
            return f"pack_size {self.pack_size} is not 1 or 2"
        feed = self.neighbour(ctx, self.stream, "feed_buffer")
        if feed is not None and feed.collect_flits.value != self.pack_size:
            return f"pack_size {self.pack_size} but the feed delivers {feed.collect_flits}"
        return None

    @rule("COP-4")
    def _cop_4(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.lanes not in target.constants.LANES:
            return f"{self.lanes} lanes; legal: {list(target.constants.LANES)}"
        if self.output_type.lane.size != self.lanes:
            return f"lanes {self.lanes} != size of the cstream's lane mapping {self.output_type.lane.size}"
        load = self.neighbour(ctx, self.weights, "trf_load")
        if load is not None and load.lanes != self.lanes:
            return f"lanes {self.lanes} but the TRF tensor has {load.lanes}"
        return None

    @rule("COP-5")
    def _cop_5(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c, r = target.constants, self.trf_read
        if not _pow2(r.read_elems):
            return f"read_elems {r.read_elems} is not a power of two"
        nbits = r.read_elems * self.bits(target, self.weight_type.dtype)
        if nbits > 8 * c.TRF_READ_BYTES:
            return f"a read of {r.read_elems} x {self.weight_type} is {nbits / 8:g} bytes, more than {c.TRF_READ_BYTES}"
        want = Width.WIDE if nbits > 8 * c.FLIT_BYTES else Width.NARROW
        if r.width is not want:
            return f"{a_an(format(nbits / 8, 'g'))}-byte read is {want}, not {r.width}"
        load = self.neighbour(ctx, self.weights, "trf_load")
        if want is Width.WIDE and load is not None and load.collect_flits is not CollectFlits.Flit2:
            return "a WIDE read needs a TRF tensor loaded with Flit2"
        return None

    @rule("COP-6")
    def _cop_6(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c = target.constants
        problem = entries_ok(self.trf_read.entries, c.SEQ_MAX_ENTRIES, c.SEQ_MAX_ITER)
        if problem:
            return f"TRF read walk: {problem}"
        if any(e.stride < 0 for e in self.trf_read.entries):
            return "TRF read walk: negative stride"
        return None

    @rule("COP-7")
    def _cop_7(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c, r = target.constants, self.trf_read
        out_time, out_packet = self.output_type.time.size, self.output_type.packet.size
        walked = math.prod(e.size for e in r.entries)
        if walked != out_time:
            return f"the TRF read walk has {walked} steps, size(out_time) is {out_time}"
        t_outer = self.input_type.time.size // max(self.pack_size, 1)
        if t_outer * math.prod(self.time_broadcast) != out_time:
            steps = t_outer * math.prod(self.time_broadcast)
            return f"{t_outer} stream steps x time_broadcast {list(self.time_broadcast)} = {steps} != size(out_time) {out_time}"
        nbits = out_packet * self.bits(target, self.stream_type.dtype)
        if nbits % 8 or nbits // 8 not in c.OUTER_PACKET_BYTES or nbits // 8 != self.pack_size * c.FLIT_BYTES:
            return f"the packet is {nbits / 8:g} bytes of {self.stream_type}, not {self.pack_size} flit(s)"
        if r.read_elems * r.packet_broadcast != out_packet:
            return f"read_elems {r.read_elems} x packet_broadcast {r.packet_broadcast} != packet size {out_packet}"
        return None


@attrs.frozen(kw_only=True)
class PacketReduce(TuOp):
    """Adjacent-pair tree of depth `d` inside the packet: `in_elems` leaves -> `out_cols` columns.

    Text: `%8 = packet_reduce in=%7 in_elems=64 depth=6 out_cols=1 : <cstream> -> <cstream>`."""

    MNEMONIC: ClassVar[str] = "packet_reduce"
    PIPELINE_RANK: ClassVar[int] = 40
    TRACED_STAGE: ClassVar[str | None] = "contract_packet"
    IN_KINDS: ClassVar[tuple[str, ...]] = ("cstream",)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("cstream",)
    ENGINE: ClassVar[Engine] = PACKET_REDUCER
    busy_cycles = stream_cycles
    cost_counters = no_counters

    input: Ref = operand(name="in")
    in_elems: int = attr()
    depth: int = attr()
    out_cols: int = attr()

    @classmethod
    def of_types(cls, result: Ref, src: Ref, t: Any, out: Any, loc: Any) -> PacketReduce:
        """The smallest adder-tree depth of PACKET-4 from `t`'s packet to `out`'s."""
        if (depth := packet_depth(t.packet, out.packet)) is None:
            raise ValueError("no packet depth")
        return cls(result=result, input=src, in_elems=t.packet.size, depth=depth, out_cols=out.packet.size,
                   input_type=t, output_type=out, loc=loc)

    derived = derived_of_types

    @rule("PRED-1")
    def _pred_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        nbits = self.in_elems * self.bits(target, self.input_type.dtype)
        if nbits % 8 or nbits // 8 not in target.constants.OUTER_PACKET_BYTES:
            return f"{self.in_elems} x {self.input_type.dtype} is {nbits / 8:g} bytes, not one of {list(target.constants.OUTER_PACKET_BYTES)}"
        if self.in_elems != self.input_type.packet.size:
            return f"in_elems {self.in_elems} != size of the input packet {self.input_type.packet.size}"
        return None

    @rule("PRED-2")
    def _pred_2(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if not 0 <= self.depth <= self.in_elems.bit_length() or self.in_elems % (1 << self.depth):
            return f"depth {self.depth} does not divide {self.in_elems} leaves into whole trees"
        return None

    @rule("PRED-3")
    def _pred_3(self, target: Any, ctx: VerifyContext | None) -> str | None:
        cols = target.constants.ACC_COLS
        if not _pow2(self.out_cols) or self.out_cols > cols:
            return f"out_cols {self.out_cols} is not a power of two at most {cols}"
        if self.out_cols != self.output_type.packet.size:
            return f"out_cols {self.out_cols} != size of the output packet {self.output_type.packet.size}"
        return None


@attrs.frozen
class TimeLoop:
    """One Time Reducer loop, printed `size:KEEP` / `size:REDUCE`."""

    TEXT_STYLE: ClassVar[str] = "entry"
    size: int
    kind: LoopKind

    @property
    def keep(self) -> bool:  # `ir.rules.time_reduction.inner_time` reads it
        return self.kind is LoopKind.KEEP


def _refines(sizes: list[int], factor_sizes: list[int]) -> bool:
    """Do consecutive groups of `sizes` multiply to `factor_sizes`, in order (size-1 skipped)?"""
    sizes = [s for s in sizes if s != 1]
    i = 0
    for f in (f for f in factor_sizes if f != 1):
        acc = 1
        while acc < f and i < len(sizes):
            acc, i = acc * sizes[i], i + 1
        if acc != f:
            return False
    return i == len(sizes)


@attrs.frozen(kw_only=True)
class TimeReduce(TuOp):
    """Accumulate the REDUCE loops of the pre-reduce time into `slots` accumulator slots.

    Text: `%9 = time_reduce in=%8 loops=[32:KEEP, 4:KEEP, 2:REDUCE] slots=1 mode=INTERLEAVED
    : <cstream> -> <cstream>`."""

    MNEMONIC: ClassVar[str] = "time_reduce"
    PIPELINE_RANK: ClassVar[int] = 50
    TRACED_STAGE: ClassVar[str | None] = "contract_time"
    IN_KINDS: ClassVar[tuple[str, ...]] = ("cstream",)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("cstream",)
    ENGINE: ClassVar[Engine] = TIME_REDUCER
    busy_cycles = stream_cycles
    cost_counters = no_counters

    input: Ref = operand(name="in")
    loops: tuple[TimeLoop, ...] = attr(converter=lambda xs: tuple(x if isinstance(x, TimeLoop) else TimeLoop(*x) for x in xs))
    slots: int = attr()
    mode: LaneMode = attr()

    @classmethod
    def of_types(cls, result: Ref, src: Ref, t: Any, out: Any, mode: LaneMode, loc: Any) -> TimeReduce:
        """One loop per factor of `t`'s time, KEEP or REDUCE; `mode` is its program's lane fold's."""
        red = time_reduction(t.time, out.time)
        return cls(result=result, input=src, loops=tuple(TimeLoop(n, LoopKind[kind]) for n, kind in red.entries),
                   slots=red.slots, mode=mode, input_type=t, output_type=out, loc=loc)

    def derived(self, at: Derivation) -> TimeReduce:
        if (lane := at.first("lane_fold")) is None:
            raise ValueError("a time_reduce without a lane_fold in its program")
        return self.of_types(self.result, self.input, self.input_type, self.output_type, lane.mode, self.loc)

    @rule("TRED-1")
    def _tred_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        sizes = [lp.size for lp in self.loops]
        if any(s < 1 for s in sizes):
            return "a loop has size 0"
        pre, out = self.input_type.time, self.output_type.time
        if math.prod(sizes) != pre.size or not _refines(sizes, [f.extent for f in pre.factors()]):
            return f"loops {sizes} do not refine the pre-reduce time ({pre.size} steps)"
        kept = [lp.size for lp in self.loops if lp.kind is LoopKind.KEEP]
        if math.prod(kept) != out.size or not _refines(kept, [f.extent for f in out.factors()]):
            return f"the KEEP loops {kept} do not form out_time ({out.size} steps)"
        return None

    @rule("TRED-2")
    def _tred_2(self, target: Any, ctx: VerifyContext | None) -> str | None:
        it = inner_time(self.loops)
        if self.slots != it:
            return f"slots {self.slots}, but the loops give IT = {it}"
        return None

    @rule("TRED-3")
    def _tred_3(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c = target.constants
        cols, lanes = self.input_type.packet.size, self.input_type.lane.size
        if self.mode is LaneMode.INTERLEAVED:
            chunk = c.LANE_BUS * cols
        else:
            chunk = lanes * c.ACC_COLS * -(-cols // c.ACC_COLS)
        if self.slots * chunk > c.ACC_CELLS:
            return f"{self.slots} slots x {chunk} cells exceed the {c.ACC_CELLS}-cell accumulator"
        return None


@attrs.frozen(kw_only=True)
class LaneFold(TuOp):
    """Drain the accumulator into a stream of 8 x 32-bit packets, lane by lane or interleaved.

    Text: `%10 = lane_fold in=%9 mode=INTERLEAVED lanes=8 cols=1 cycles=128 : <cstream> -> <stream>`."""

    MNEMONIC: ClassVar[str] = "lane_fold"
    PIPELINE_RANK: ClassVar[int] = 60
    TRACED_STAGE: ClassVar[str | None] = "contract_lane"
    IN_KINDS: ClassVar[tuple[str, ...]] = ("cstream",)
    ENGINE: ClassVar[Engine] = LANE_FOLDER
    cost_counters = no_counters

    input: Ref = operand(name="in")
    mode: LaneMode = attr()
    lanes: int = attr()
    cols: int = attr()
    cycles: int = attr()

    @classmethod
    def of_types(cls, result: Ref, src: Ref, t: Any, out: Any, mode: LaneMode, loc: Any) -> LaneFold:
        """Drain the accumulator of `t` by `mode` (`ir.rules.contract_geometry.lane_geometry`)."""
        geo = lane_geometry(t, out.time, out.packet, mode)
        return cls(result=result, input=src, mode=mode, lanes=geo.lanes, cols=geo.cols, cycles=geo.cycles,
                   input_type=t, output_type=out, loc=loc)

    def derived(self, at: Derivation) -> LaneFold:
        return self.of_types(self.result, self.input, self.input_type, self.output_type, self.mode, self.loc)

    def busy_cycles(self, rate: Rate, target: Any) -> int:
        """The drain's own count, in the record (`cycles`)."""
        return int(self.cycles)

    @rule("LFOLD-1")
    def _lfold_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if not 1 <= self.cols <= target.constants.ACC_COLS:
            return f"{self.cols} columns, at most {target.constants.ACC_COLS}"
        if self.cols != self.input_type.packet.size:
            return f"cols {self.cols} != size of the input packet {self.input_type.packet.size}"
        return None

    @rule("LFOLD-2")
    def _lfold_2(self, target: Any, ctx: VerifyContext | None) -> str | None:
        out, c = self.output_type, target.constants
        bits = self.bits(target, out.dtype)
        if out.packet.size != c.LANE_BUS or bits != 32:
            return f"the output packet is {out.packet.size} x {out.dtype}, not {c.LANE_BUS} x 32-bit"
        return None

    @rule("LFOLD-3")
    def _lfold_3(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c = target.constants
        if self.lanes not in c.LANES or self.lanes != self.input_type.lane.size:
            return f"lanes {self.lanes} != the cstream's {self.input_type.lane.size} lanes"
        steps = self.input_type.time.size
        if self.mode is LaneMode.INTERLEAVED:
            want = steps * self.cols
        else:
            want = steps * self.lanes * -(-self.cols // c.LANE_BUS)
        if self.cycles != want:
            return f"cycles {self.cycles}, expected {want} for {self.mode.name}"
        if self.cycles != self.output_type.time.size:
            return f"cycles {self.cycles} != size(out_time) {self.output_type.time.size}"
        return None
