"""`FeedBuffer`: the lowered front half of a TU program (docs/reference/diagnostics.md).

DM read (one `ReadShape` per source), Fetch Adapter conversions, Collect and delivery
to one destination op, with an optional Switch Engine stage between the conversions and
Collect (`tu_ops.switch`). The verifier implements FEED-1 ... FEED-15 in that order
(FEED-15, the levels a feed reads its tensor under, in `tu_ops.feed_source`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from ir.dtypes import DType
from ir.mapping.nodes import IDENTITY, Mapping as MappingExpr
from ir.rules.collect import collect_plan
from ir.rules.read_plan import fetch_read_plan
from ir.types import StreamType
from tu_ops.base import Derivation, Ref, TuOp, VerifyContext, attr, entries_ok, fact, operand, rule
from tu_ops.engines import FETCH, Engine
from tu_ops.enums import CollectFlits, Conversion, ConversionKind, FeedElementType, TuContext
from tu_ops.feed_cost import feed_counters, feed_cycles
from tu_ops.feed_source import source_problem, start_problem
from tu_ops.feed_fields import DestKind, FeedDest, FeedInterleave, FeedSource, ReadShape, as_entries, sized_feed_read
from tu_ops.fetch_mask import mask_problem, masked
from tu_ops.printing import mapping_text, value_text
from tu_ops.switch import SwitchRoute, route_of, route_problem
from ir.fetch_mask import FetchMaskConfig
from tu_ops.feed_conversions import conversion_step as _conversion_step, conversions_text as _names
from tu_ops.feed_lift import FeedLift, fetched_type, lift_problem
from ir.words import a_an

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["DestKind", "FeedSource", "FeedInterleave", "FeedLift", "FeedDest", "ReadShape", "FeedBuffer", "as_entries",
           "sized_feed_read"]


@attrs.frozen(kw_only=True)
class FeedBuffer(TuOp):
    """Multi-shape feed: read DM by `shapes`, convert, collect into flits, deliver to `dest`.

    Text: `%4 = feed_buffer context=SUB source=(%3, 0, i8, "N % 32, K") conversions=[]
    element_type=RawInt8 shapes=[{time=[8:128, 4:1024], packet=[128:1], packet_elems=128,
    read_elems=8}] flits_per_packet=4 collect_flits=Flit2 beats=64 dest=(TRF_LOAD, %5) : <in> -> <out>`
    (one line). `source_base` (the source tensor's DM byte address) is the [L] fact of FEED-11."""

    MNEMONIC: ClassVar[str] = "feed_buffer"
    PIPELINE_RANK: ClassVar[int] = 10
    TRACED_STAGE: ClassVar[str | None] = "begin"
    ENGINE: ClassVar[Engine] = FETCH
    SLICE_AFTER: ClassVar[str | None] = "switch.out_slice"  # a switch moves the streams to its out_slice
    busy_cycles = feed_cycles
    cost_counters = feed_counters

    context: TuContext = attr()
    source: FeedSource = attr()
    conversions: tuple[Conversion, ...] = attr(converter=tuple)
    element_type: FeedElementType = attr()
    shapes: tuple[ReadShape, ...] = attr(converter=tuple)
    flits_per_packet: int = attr()
    collect_flits: CollectFlits = attr()
    beats: int = attr()
    dest: FeedDest = attr()
    switch: SwitchRoute | None = attr(default=None, optional=True)
    source_base: int | None = fact()
    interleave: FeedInterleave | None = attr(default=None)  # printed only when set (an interleaved begin)
    mask: FetchMaskConfig | None = attr(default=None, optional=True)  # the Fetch Adapter mask (FEED-14)
    # the levels a reshaped view relabelled the source tensor to (FEED-15), printed only then
    reshape: tuple[MappingExpr, ...] | None = attr(default=None, optional=True, converter=attrs.converters.optional(tuple))
    # the fetch lifts, outermost dimension first (FEED-16), printed only when the chain lifts
    lift: tuple[FeedLift, ...] | None = attr(default=None, optional=True, converter=attrs.converters.optional(tuple))
    # a view tiled at a runtime start (RUNTIME-8, tu_ops.feed_source), printed only then
    start: Ref | None = operand(optional=True)
    start_elems: int | None = attr(default=None, optional=True)
    start_limit: int | None = attr(default=None, optional=True)
    # an interleaved begin's second view read at another element offset than the first (a
    # fixed distance from it; the runtime start moves both), printed only then (FEED-15, RUNTIME-8)
    rhs_offset: int | None = attr(default=None, optional=True)

    @classmethod
    def of_types(cls, result: Ref, context: TuContext, source: FeedSource, begin: Any, fetched: Any, collected: Any,
                 out: Any, flits: CollectFlits, target: Any, **choices: Any) -> FeedBuffer:
        """The feed reading `begin` (the stream `ctx.begin` opens on `source`) as the fetch's
        `fetched`, collecting `collected` (the stream its adapters leave) into `out`, `flits` per
        time step as its destination packs them. The read shape is the fetch read plan of
        `ir.rules.fetch` (after lifts, of the last lift's time); `flits_per_packet` the collect
        plan's; `read_elems` the widest legal fetch of FETCH-11. `choices`: `conversions`, `dest`,
        `switch`, `interleave`, `mask`, `lift`, `loc`."""
        lift = choices.get("lift")
        plan = fetch_read_plan(begin, lift[-1].time if lift else fetched.time, fetched.packet)
        if plan is None:
            raise ValueError("the fetch has no read plan")
        cplan = collect_plan(collected.dtype, collected.time, collected.packet)
        if cplan is None:
            raise ValueError("the collect has no plan")
        plan, reads = sized_feed_read(context, begin.dtype, plan, collected.dtype, target)
        shape = ReadShape(time=plan.time_entries, packet=plan.packet_entries, packet_elems=plan.packet_elems,
                          read_elems=reads)
        return cls(result=result, context=context, source=source, element_type=FeedElementType.of(collected.dtype),
                   shapes=(shape,), flits_per_packet=cplan.flits, collect_flits=flits, beats=out.time.size // flits.value,
                   input_type=fetched, output_type=out, **choices)

    def derived(self, at: Derivation) -> FeedBuffer:
        """The user's choices (conversions, lifts, mask axis, switch, interleaving, window) are
        the record's; the stream they leave, and every field read from it, are derived."""
        tensor = at.types.get(self.source.tensor.id)
        if getattr(tensor, "kind", None) != "dm":
            raise ValueError(f"the feed reads {self.source.tensor}, which is not a DM tensor")
        if at.index + 1 >= len(at.ops):
            raise ValueError("the feed delivers to no op")
        nxt = at.ops[at.index + 1]
        element = self.source.element  # a window of its tensor (docs/views.md)
        begin = StreamType(tensor.dtype, tensor.chip, tensor.cluster, tensor.slice, IDENTITY, element, self.context.value)
        if self.interleave is not None:  # `begin_interleaved(lhs, rhs, axis)`
            begin = attrs.evolve(begin, packet=self.interleave.axis.pair(element))
        dtypes = self.dtype_chain(at.target)
        if dtypes is None:
            raise ValueError(f"the conversions {value_text(self.conversions)} are not a legal adapter chain")
        cur, mask = attrs.evolve(self.fetched_type(), dtype=dtypes[-1]), None
        if self.mask is not None:
            mask, cur = masked(self.mask.axis, cur)
        switch = None
        if self.switch is not None:
            try:
                config = self.switch.variant()
            except (TypeError, ValueError) as e:
                raise ValueError(f"switch config: {e}") from None
            switch = route_of(cur.slice, cur.time, self.switch.out_slice, self.switch.out_time, config)
            cur = attrs.evolve(cur, slice=self.switch.out_slice, time=self.switch.out_time)
        low = self.of_types(self.result, self.context, FeedSource(self.source.tensor, 0, tensor.dtype, element), begin,
                            self.input_type, cur, self.output_type, nxt.feed_packing(), at.target,
                            conversions=self.conversions, dest=FeedDest(nxt.FEED_DEST and DestKind.of(type(nxt)), nxt.result), switch=switch,
                            interleave=self.interleave, mask=mask, lift=self.lift or None, loc=self.loc)
        low = attrs.evolve(low, reshape=self.reshape, start=self.start, start_elems=self.start_elems,
                           start_limit=self.start_limit, rhs_offset=self.rhs_offset)  # FEED-15 and RUNTIME-8 check these
        if mapping_text(element) == mapping_text(tensor.element):
            return low  # the whole tensor: offset 0
        return attrs.evolve(low, source=attrs.evolve(low.source, offset=self.source.offset))  # a window: verify checks it

    def fetched_type(self) -> Any:
        """The stream the Fetch Engine delivers: `input_type` (the fetch's own) after the lifts."""
        return fetched_type(self.input_type, self.lift)

    def fields(self) -> list[tuple[str, Any]]:
        return [(n, v) for n, v in super().fields() if n != "interleave" or v is not None]

    def operands(self) -> list[Ref]:
        """A feed reads its source tensor(s); `dest` is a forward reference, not an input."""
        return [self.source.tensor] + [r for r in (getattr(self.interleave, "tensor", None), self.start) if r is not None]

    def stream_input(self) -> Ref | None:
        return None

    def dtype_chain(self, target: Any) -> list[DType] | None:
        """Source dtype, then the dtype after each conversion; None where a step is not legal."""
        chain = [self.source.dtype]
        for c in self.conversions:
            d = chain[-1]
            if c.kind is ConversionKind.ZP_SUB:
                entry = target.zero_point_entry(d)
                if entry is None:
                    return None
                chain.append(entry.dst)
                continue
            if c.kind.pair[0] != d:
                return None
            chain.append(c.kind.pair[1])
        return chain

    # --- rules -------------------------------------------------------------------------

    @rule("FEED-1")
    def _feed_1(self, target: Any, ctx: VerifyContext | None) -> str | None:
        src = self.source.dtype
        if not target.materializable(src):
            return f"source dtype {src} cannot be stored in DM on target {target.name}"
        if self.input_type.dtype != src:
            return f"source dtype {src} differs from the fetch stream's {self.input_type.dtype}"
        if len(self.conversions) > 2:
            return f"{len(self.conversions)} conversions; a feed has at most two"
        ranks = [c.kind.rank for c in self.conversions]
        if ranks != sorted(set(ranks)):
            return "conversions must be in adapter order (lookup, cast, zero point), each at most once"
        d = src
        for c in self.conversions:
            problem, d = _conversion_step(target, c, d)
            if problem:
                return problem
        if d != self.element_type.dtype:
            return f"conversions {_names(self.conversions)} turn {src} into {d}, but element_type is {self.element_type}"
        if self.output_type.dtype != d:
            return f"element_type {self.element_type} differs from the collect stream's {self.output_type.dtype}"
        return None

    @rule("FEED-2")
    def _feed_2(self, target: Any, ctx: VerifyContext | None) -> str | None:
        accepted = self.dest.kind.op_class.FEED_ELEMENTS
        if self.element_type not in accepted:
            names = ", ".join(sorted(e.name for e in accepted))
            return f"{self.dest.kind} does not accept element type {self.element_type} (accepted: {names})"
        return None

    @rule("FEED-3")
    def _feed_3(self, target: Any, ctx: VerifyContext | None) -> str | None:
        flits = self.collect_flits
        if not isinstance(flits, CollectFlits):
            return f"collect_flits {flits!r} is not Flit1 or Flit2"
        if flits is CollectFlits.Flit2 and self.dest.kind.op_class.FEED_PACKING is None:  # it packs one flit
            # the packing kinds among the record classes loaded (every one, where a feed is verified:
            # lowering and the VISA parser load them all): this module is below them, so it cannot
            packers = (kind.name for kind in DestKind if kind.op_class.FEED_PACKING is not None)
            return f"Flit2 delivery only into {' or '.join(packers)}, not {self.dest.kind}"
        time2 = self.output_type.time.size
        if self.beats * flits.value != time2:
            return f"beats {self.beats} x {flits.value} flits != size(time2) {time2}"
        fetched = math.prod(e.size for e in self.shapes[0].time) if self.shapes else 1
        fin = self.fetched_type()
        if self.switch is not None and fin.time.size:  # the switch moves slice digits to time
            fetched = fetched * self.switch.out_time.size // fin.time.size
        if fetched * self.flits_per_packet != time2:
            return (f"{fetched} fetched packets x {self.flits_per_packet} flits != size(time2) {time2}")
        if self.dest.kind.name == "CONTRACT_OUTER":
            outer = self.neighbour(ctx, self.dest.op, "contract_outer")
            if outer is not None and outer.pack_size != flits.value:
                return f"{flits} but the consuming contract_outer has pack_size {outer.pack_size}"
        if self.dest.kind.name == "TRF_LOAD":
            load = self.neighbour(ctx, self.dest.op, "trf_load")
            want = None if load is None else (
                CollectFlits.Flit2 if load.bytes_per_lane % (2 * target.constants.FLIT_BYTES) == 0 else CollectFlits.Flit1)
            if want is not None and flits is not want:
                return f"{flits} but a TRF tensor of {load.bytes_per_lane} bytes per lane is loaded with {want}"
        return None

    @rule("FEED-4")
    def _feed_4(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.interleave is not None:
            axis = self.interleave.axis
            if not (len(axis.axes()) == 1 and axis.size == 2 and axis.equivalent(axis.normalize())
                    and next(iter(axis.axes())) not in self.source.element.axes()):
                return f"the interleave axis {axis} is not one size-2 axis outside the element {self.source.element}"
        if len(self.shapes) == 1:
            return None
        if len(self.shapes) != 2:
            return f"{len(self.shapes)} read shapes; expected 1 (or 2 for an interleaved begin)"
        a, b = self.shapes
        if (a.sizes(), a.packet_elems, a.read_elems) != (b.sizes(), b.packet_elems, b.read_elems):
            return "the two read shapes of an interleaved feed differ"
        return None

    @rule("FEED-5")
    def _feed_5(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c = target.constants
        for i, shape in enumerate(self.shapes):
            problem = entries_ok(shape.entries(), c.SEQ_MAX_ENTRIES, c.SEQ_MAX_ITER)
            if problem:
                return f"read shape {i}: {problem}"
            if any(e.stride < 0 for e in shape.entries()):
                return f"read shape {i}: negative stride"
        return None

    @rule("FEED-6")
    def _feed_6(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c, bits = target.constants, self.bits(target, self.source.dtype)
        out, word = self.bits(target, self.element_type.dtype), 8 * c.SUB_ACCESS_BYTES
        sub = 4 if (self.source.dtype, self.element_type.dtype) == (DType.I4, DType.I32) else c.SUB_ACCESS_BYTES
        for shape in self.shapes:
            nbits = shape.read_elems * bits
            if shape.read_elems < 1 or nbits % 8 or nbits // 8 not in c.SEQ_ACCESS_BYTES:
                return (f"a DM access of {shape.read_elems} x {self.source.dtype} is not one of "
                        f"{list(c.SEQ_ACCESS_BYTES)} bytes")
            if self.context is TuContext.SUB and nbits // 8 != sub:
                return f"the sub context reads exactly {sub} bytes here, not {nbits // 8}"
            strided = bool(shape.packet) and shape.packet[-1].stride != 1  # read element by element (FEED-7)
            if nbits < word and shape.read_elems * out % word and not strided:  # FETCH-11: widened to words
                return (f"{a_an(nbits // 8)}-byte access, narrower than one {word // 8}-byte word, leaves the adapter "
                        f"as {shape.read_elems * out} bits, not whole words")
        return None

    @rule("FEED-7")
    def _feed_7(self, target: Any, ctx: VerifyContext | None) -> str | None:
        for shape in self.shapes:
            r = shape.read_elems
            n, s = (shape.packet[-1].size, shape.packet[-1].stride) if shape.packet else (1, 0)
            if r != 1 and not (s in (0, 1) and n % r == 0):
                return f"innermost packet entry {n}:{s} cannot be read {r} elements at a time"
        return None

    @rule("FEED-8")
    def _feed_8(self, target: Any, ctx: VerifyContext | None) -> str | None:
        chain = self.dtype_chain(target) or [self.source.dtype]
        limit = target.constants.FLIT_BYTES
        for shape in self.shapes:
            nbits = shape.read_elems * self.bits(target, chain[0])
            for src, dst in zip(chain, chain[1:]):
                ratio = (self.bits(target, dst), self.bits(target, src))
                nbits = nbits * ratio[0] // max(ratio[1], 1)
                if ratio[0] > ratio[1] and nbits > 8 * limit:
                    return (f"{src} -> {dst} widens {a_an(shape.read_elems)}-element read to {nbits // 8} bytes, "
                            f"more than {limit}")
        return None

    @rule("FEED-9")
    def _feed_9(self, target: Any, ctx: VerifyContext | None) -> str | None:
        c = target.constants
        shape = self.shapes[0] if self.shapes else None
        if shape is None:
            return "no read shape"
        if math.prod(e.size for e in shape.packet) != shape.packet_elems:
            return f"packet entries cover {math.prod(e.size for e in shape.packet)} elements, not packet_elems {shape.packet_elems}"
        if shape.packet_elems != self.input_type.packet.size:
            return f"packet_elems {shape.packet_elems} != size of the fetch packet {self.input_type.packet.size}"
        nbits = shape.packet_elems * self.bits(target, self.element_type.dtype)
        if nbits <= 0 or nbits % (8 * c.PACKET_ALIGN):
            return f"a packet of {shape.packet_elems} x {self.element_type} is not a positive multiple of {c.PACKET_ALIGN} bytes"
        flits = -(-nbits // (8 * c.FLIT_BYTES))
        if self.flits_per_packet != flits:
            return f"flits_per_packet {self.flits_per_packet}, but {a_an(nbits // 8)}-byte packet is {flits} flits"
        return None

    @rule("FEED-10")
    def _feed_10(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.context is TuContext.SUB and any(c.kind.stage == "lookup" for c in self.conversions):
            return "a table lookup runs only in the MAIN context"
        return None

    @rule("FEED-11")
    def _feed_11(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.source_base is None:
            return None
        bits, limit = self.bits(target, self.source.dtype), target.constants.DM_SLICE_BYTES
        if self.source_base < 0 or self.source.offset < 0:
            return "the read starts before the start of DM"
        for shape in self.shapes:
            last = self.source.offset + sum((e.size - 1) * e.stride for e in shape.entries())
            end = self.source_base + -(-((last + 1) * bits) // 8)
            if end > limit:
                return f"the read touches DM bytes up to {end}, past the slice's {limit}"
        return None

    @rule("FEED-12")
    def _feed_12(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.input_type.context != self.context.value or self.output_type.context != self.context.value:
            return f"context {self.context} differs from its streams' context"
        if ctx is None:
            return None
        consumer = ctx.op(self.dest.op)
        if consumer is None:
            return f"dest {self.dest.op} does not exist"
        if not isinstance(consumer, self.dest.kind.op_class):  # the named record, or a kind of it
            return f"dest kind {self.dest.kind} but {self.dest.op} is {a_an(consumer.MNEMONIC)}"
        program = ctx.program_of(self.result)
        if program is None or ctx.program_of(self.dest.op) is not program:
            return f"dest {self.dest.op} is not in the same program"
        if program.context is not self.context:
            return f"feed context {self.context} in {a_an(program.context)} program"
        if consumer.stream_input() != self.result:
            return f"{self.dest.op} does not stream from this feed"
        others = [op.result for op in program.ops if op.result != self.result and op.MNEMONIC == "feed_buffer"
                  and op.dest.op == self.dest.op]
        if others:
            return f"{self.dest.op} is also fed by {others[0]}"
        return None

    @rule("FEED-13")
    def _feed_13(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.switch is None:
            return None
        fetched = attrs.evolve(self.fetched_type(), dtype=self.element_type.dtype)
        return route_problem(self.switch, fetched, self.output_type)

    @rule("FEED-14")
    def _feed_14(self, target: Any, ctx: VerifyContext | None) -> str | None:
        return None if self.mask is None else mask_problem(self.mask, self.fetched_type())

    @rule("FEED-15")
    def _feed_15(self, target: Any, ctx: VerifyContext | None) -> str | None:
        return source_problem(self, ctx)

    @rule("RUNTIME-8")
    def _runtime_8(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return start_problem(self, ctx)

    @rule("FEED-16")
    def _feed_16(self, target: Any, ctx: VerifyContext | None) -> str | None:
        return None if self.lift is None else lift_problem(self, target)

