"""`begin` ... `collect` lowered to one FeedBuffer (docs/reference/diagnostics.md).

The read shape is the fetch read plan of `ir.rules.fetch` (one computation, shared with
FETCH-4..10; after fetch lifts, the plan of the last lift's time); `flits_per_packet` is the
collect plan's flit count; `read_elems` is the widest legal fetch of FETCH-11
(`ir.rules.fetch.fetch_volume`): 8 bytes' worth in SUB; in MAIN the largest fetch size
dividing the contiguous run (the innermost packet entry when its stride is 1, else one
element) that the adapter's widening keeps within one flit and, below 8 bytes, whole words.
"""

from __future__ import annotations

from typing import Any

from ir import ops as ir
from ir.dtypes import DType
from ir.data_movement_ops import Switch
from ir.errors import InternalError
from ir.fetch_lift_ops import FetchLift
from ir.fetch_mask_ops import FetchMask
from ir.rules.collect import collect_plan
from ir.rules.fetch import ReadPlan, fetch_read_plan, fetch_volume, read_run
from tu_ops.base import Ref
from tu_ops.enums import CollectFlits, Conversion, ConversionKind, DestKind, FeedElementType, TuContext
from tu_ops.feed import FeedBuffer, FeedDest, FeedInterleave, FeedLift, FeedSource, ReadShape
from tu_ops.lower.dispatch import LOWERINGS
from tu_ops.lower.program import ProgramChain
from tu_ops.switch import SwitchRoute, route_of

__all__ = ["lower_feed", "conversions_of", "read_elems", "dest_kind"]


def dest_kind(chain: ProgramChain) -> DestKind:
    """The kind of op the chain's collect stream feeds: the `FEED_DEST` of the tu op class its
    consumer lowers into (`@lowers(..., into=)`)."""
    consumer = chain.after_collect()[0]
    into = LOWERINGS.facts(type(consumer)).get("into")
    kind = getattr(into, "FEED_DEST", None)
    if kind is DestKind.VECTOR:  # a pair or tagged pass lowers to its own record
        from tu_ops.lower.vector_kind import record_kind

        kind = record_kind(chain.after_collect()[1:])
    if kind is None:
        raise InternalError(f"collect feeds a `{consumer.STAGE}`, which has no FeedBuffer destination")
    return kind


def conversions_of(adapters: tuple[ir.Op, ...]) -> tuple[Conversion, ...]:
    """The Fetch Adapter conversions of the chain, lookup first; identity casts record none."""
    out: list[Conversion] = []
    for op in adapters:
        src = op.input.type.dtype
        if isinstance(op, ir.FetchZeroPointSub):
            out.append(Conversion(ConversionKind.ZP_SUB, op.zero_point))
            continue
        if isinstance(op, ir.FetchCast) and op.dtype == src:
            continue
        stage = "lookup" if isinstance(op, ir.FetchTableLookup) else "cast"
        kind = ConversionKind.named(stage, src, op.dtype)
        if kind is None:
            raise InternalError(f"no FeedBuffer conversion for the {stage} {src} -> {op.dtype}")
        out.append(Conversion(kind))
    return tuple(out)


def read_elems(context: TuContext, src: DType, plan: ReadPlan, out: DType, target: Any) -> int:
    """Elements of one DM access: the widest legal fetch of the read (FETCH-11,
    `ir.rules.fetch.fetch_volume`), with the adapter leaving `out`."""
    if context is TuContext.MAIN and plan.innermost_packet.stride != 1:
        return 1  # a strided packet: one element per access (FEED-7), outside FETCH-11
    bits = lambda d: target.bits_of(d) or d.bits  # noqa: E731
    n = fetch_volume(context.value, bits(src), bits(out), read_run(plan))
    if n is None:
        raise InternalError(f"no legal fetch size reads a {read_run(plan)}-element run of {src} as {out}")
    return n


def lower_feed(chain: ProgramChain, result: int, dest: int, flits: CollectFlits, source: Ref,
               source_element: Any, target: Any, second: Ref | None = None) -> FeedBuffer:
    """The FeedBuffer of `chain` (numbered `result`), delivering to op number `dest`; `second`
    is the second DM tensor of an interleaved begin (`begin_interleaved`)."""
    begin, fetch, collect = chain.begin, chain.fetch, chain.collect
    lifts = _lifts(chain)
    plan = fetch_read_plan(begin.result.type, lifts[-1].time if lifts else fetch.time, fetch.packet)
    if plan is None:
        raise InternalError(f"{fetch.text()}: the fetch has no read plan")
    src = begin.result.type.dtype
    adapters = chain.adapters
    stream_in = collect.input.type
    element = stream_in.dtype
    context = TuContext(chain.context)
    cplan = collect_plan(element, stream_in.time, stream_in.packet)
    if cplan is None:
        raise InternalError(f"{collect.text()}: the collect has no plan")
    time2 = collect.result.type.time.size
    shape = ReadShape(time=plan.time_entries, packet=plan.packet_entries, packet_elems=plan.packet_elems,
                      read_elems=read_elems(context, src, plan, element, target))
    return FeedBuffer(
        result=Ref(result), context=context,
        source=FeedSource(source, 0, src, source_element),
        conversions=conversions_of(adapters), element_type=FeedElementType.of(element),
        shapes=(shape,), flits_per_packet=cplan.flits, collect_flits=flits,
        beats=time2 // flits.value, dest=FeedDest(dest_kind(chain), Ref(dest)),
        input_type=fetch.result.type, output_type=collect.result.type,
        switch=_route(chain), loc=begin.loc,
        interleave=None if second is None else FeedInterleave(second, begin.axis), mask=_mask(chain),
        lift=lifts or None)


def _lifts(chain: ProgramChain) -> tuple[FeedLift, ...]:
    """The chain's fetch lifts (ir.fetch_lift_ops), outermost dimension first, as record items."""
    return tuple(FeedLift(op.DIM, op.out_placement, op.out_time) for op in chain.ops if isinstance(op, FetchLift))


def _mask(chain: ProgramChain) -> Any:
    """The configuration of the chain's `fetch_mask` (tu_ops.fetch_mask), if it has one."""
    op = chain.first(FetchMask)
    return None if op is None else op.config()


def _route(chain: ProgramChain) -> SwitchRoute | None:
    """The feed's switch stage, when the chain switches between its adapters and collect."""
    op = chain.first(Switch)
    if op is None:
        return None
    t = op.input.type
    return route_of(t.slice, t.time, op.out_slice, op.out_time, op.config)
