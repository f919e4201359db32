"""`begin` ... `collect` lowered to one FeedBuffer (docs/reference/diagnostics.md).

The read shape is the fetch read plan of `ir.rules.fetch` (one computation, shared with
FETCH-4..10); `flits_per_packet` is the collect plan's flit count; `read_elems` is chosen
here (11.2): 8 bytes' worth in SUB; in MAIN the largest count whose byte size is a legal
DM access, dividing the contiguous run (the innermost packet entry when its stride is 1,
else one element), whose bytes times the adapter's widening stay within one flit.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ir import ops as ir
from ir.dtypes import DType
from ir.engine_ops import Switch
from ir.errors import InternalError
from ir.rules.collect import collect_plan
from ir.rules.fetch import ReadPlan, fetch_read_plan
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


def _widening(chain: list[DType], bits: Any) -> Fraction:
    """The largest ratio bits(after a step) / bits(source) over the adapter chain (>= 1)."""
    w = Fraction(1)
    for d in chain[1:]:
        w = max(w, Fraction(bits(d), bits(chain[0])))
    return w


def read_elems(context: TuContext, src: DType, plan: ReadPlan, widening: Fraction, target: Any) -> int:
    """Elements of one DM access (docs/reference/diagnostics.md, FEED-6..8)."""
    c = target.constants
    bits = target.bits_of(src) or src.bits
    if context is TuContext.SUB:
        return c.SUB_ACCESS_BYTES * 8 // bits
    inner = plan.packet_entries[-1] if plan.packet_entries else None
    run = inner.size if inner is not None and inner.stride == 1 else 1
    for nbytes in sorted(c.SEQ_ACCESS_BYTES, reverse=True):
        if (nbytes * 8) % bits or nbytes * widening > c.FLIT_BYTES:
            continue
        n = nbytes * 8 // bits
        if run % n == 0:
            return n
    raise InternalError(f"no legal DM access size reads a {run}-element run of {src}")


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
    dtypes = [src] + [op.dtype for op in adapters]
    stream_in = collect.input.type
    element = stream_in.dtype
    context = TuContext(chain.context)
    cplan = collect_plan(element, stream_in.time, stream_in.packet)
    if cplan is None:
        raise InternalError(f"{collect.text()}: the collect has no plan")
    time2 = collect.result.type.time.size
    bits = lambda d: target.bits_of(d) or d.bits  # noqa: E731
    shape = ReadShape(time=plan.time_entries, packet=plan.packet_entries, packet_elems=plan.packet_elems,
                      read_elems=read_elems(context, src, plan, _widening(dtypes, bits), target))
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
    from ir.fetch_lift_ops import FetchLift

    return tuple(FeedLift(op.DIM, op.out_placement, op.out_time) for op in chain.ops if isinstance(op, FetchLift))


def _mask(chain: ProgramChain) -> Any:
    """The configuration of the chain's `fetch_mask` (tu_ops.fetch_mask), if it has one."""
    from ir.fetch_mask_ops import FetchMask

    op = chain.first(FetchMask)
    return None if op is None else op.config()


def _route(chain: ProgramChain) -> SwitchRoute | None:
    """The feed's switch stage, when the chain switches between its adapters and collect."""
    op = chain.first(Switch)
    if op is None:
        return None
    t = op.input.type
    return route_of(t.slice, t.time, op.out_slice, op.out_time, op.config)
