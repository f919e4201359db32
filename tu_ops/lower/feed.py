"""`begin` ... `collect` lowered to one FeedBuffer (docs/reference/diagnostics.md): the
lowering reads the user's choices off the chain (conversions, lifts, mask, switch, the
destination), and the record derives the rest from the types (`FeedBuffer.of_types`).
"""

from __future__ import annotations

from typing import Any

from ir import ops as ir
from ir.data_movement_ops import Switch
from ir.errors import InternalError
from ir.fetch_lift_ops import FetchLift
from ir.fetch_mask_ops import FetchMask
from tu_ops.base import Ref
from tu_ops.enums import CollectFlits, Conversion, ConversionKind, TuContext
from tu_ops.feed import DestKind, FeedBuffer, FeedDest, FeedInterleave, FeedLift, FeedSource
from tu_ops.lower.dispatch import LOWERINGS
from tu_ops.lower.program import ProgramChain
from tu_ops.switch import SwitchRoute, route_of

__all__ = ["lower_feed", "conversions_of", "dest_kind"]


def dest_kind(chain: ProgramChain) -> DestKind:
    """The kind of op the chain's collect stream feeds: the `FEED_DEST` of the tu op class its
    consumer lowers into (`@lowers(..., into=)`; a function of the ops after the consumer
    when they choose the record, as a Vector Engine pass does)."""
    consumer, *rest = chain.after_collect()
    LOWERINGS.require(type(consumer))  # its lowering's module declares `into`
    into = LOWERINGS.facts(type(consumer)).get("into")
    if into is not None and not isinstance(into, type):
        into = into(tuple(rest))
    if getattr(into, "FEED_DEST", None) is None:
        raise InternalError(f"collect feeds a `{consumer.STAGE}`, which has no FeedBuffer destination")
    return DestKind.of(into)


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


def lower_feed(chain: ProgramChain, result: int, dest: int, flits: CollectFlits, source: Ref,
               source_element: Any, target: Any, second: Ref | None = None) -> FeedBuffer:
    """The FeedBuffer of `chain` (numbered `result`), delivering to op number `dest`; `second`
    is the second DM tensor of an interleaved begin (`begin_interleaved`)."""
    begin, fetch, collect = chain.begin, chain.fetch, chain.collect
    src = begin.result.type.dtype
    lift_ops = tuple(op for op in chain.ops if isinstance(op, FetchLift))
    lifts = tuple(FeedLift(op.DIM, op.out_placement, op.out_time) for op in lift_ops)
    _all_read(chain, (begin, fetch, *lift_ops, chain.first(FetchMask), *chain.adapters, chain.first(Switch), collect))
    try:
        return FeedBuffer.of_types(
            Ref(result), TuContext(chain.context), FeedSource(source, 0, src, source_element), begin.result.type,
            fetch.result.type, collect.input.type, collect.result.type, flits, target,
            conversions=conversions_of(chain.adapters), dest=FeedDest(dest_kind(chain), Ref(dest)),
            switch=_route(chain), interleave=None if second is None else FeedInterleave(second, begin.axis),
            mask=_mask(chain), lift=lifts or None, loc=begin.loc)  # lifts outermost first
    except ValueError as e:
        raise InternalError(f"{fetch.text()}: {e}") from e


def _all_read(chain: ProgramChain, read: tuple[Any, ...]) -> None:
    """Every traced op of the feed (up to `collect`) is one the FeedBuffer holds: an op the
    lowering does not read is an internal error here, never dropped (the cpu backend runs it)."""
    held = {id(op) for op in read if op is not None}
    left = [op for op in chain.feed_ops() if id(op) not in held]
    if left:
        raise InternalError(f"{left[0].text()}: the feed lowering does not read `{left[0].STAGE}`; a stage "
                            "between `begin` and `collect` must be a FeedBuffer field (tu_ops/feed.py)")


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
