"""Re-derive a parsed record's derived fields from its types, with the lowering's own builders.

`npu-opt visa --verify` (visa/visa.lark) must refuse a record whose fields disagree with
its types. Rather than a second derivation, this module rebuilds, from the records' input
and output IR types, the minimal traced ops (`ir.ops`) the lowering's builders read (each
record kind declares that inverse of the lowering in `visa.unlower`), calls
those builders (`tu_ops.lower.feed.lower_feed`, each stage's lowering as
`tu_ops.lower.dispatch.lower_stage` finds it, `dma.lower_dma`; they call `ir.rules.fetch.fetch_read_plan`, `collect.collect_plan` /
`trf_geometry`, `contract_geometry.*`, `time_reduction`, `commit_plan.commit_write_plan` and `dma.dma_burst`), and
returns the records the lowering would have produced. `first_difference` then names the
first field (as a dotted path into the record) where a parsed record and its re-derivation
differ.

What the types do not carry is taken from the record itself, as the user's choice it is:
the feed's conversions (the adapter chain between the fetch and collect dtypes), the lane
fold's mode (the time reducer's mode is the program's lane fold's), the commit conversion
(`commit_cast` / `commit_cast_relu`) and the trim (`commit_trim` keeps the packet's first
`valid_bytes` worth of cells, TRIM-2). Allocation results are not re-derived here (the
verifier checks them against the allocation rules): a DMA's DM-side bases are offset by the
allocation facts of `visa.facts.with_facts`, as the allocation pass offsets them; a
`trf_load`'s `base_row` and a `commit`'s `dest` are skipped.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

import attrs

from ir import ops as ir
from ir.data_movement_ops import Switch
from ir.fetch_lift_ops import LIFT_OPS
from ir.fetch_mask import masked_mapping
from ir.fetch_mask_ops import FetchMask
from ir.interleave_ops import BeginInterleaved
from ir.mapping.nodes import IDENTITY, Mapping
from ir.types import StreamType
from tu_ops.enums import ConversionKind
from tu_ops.lower.dispatch import Site, feed_flits, lower_stage
from tu_ops.lower.dma import lower_dma
from tu_ops.lower.feed import lower_feed
from tu_ops.lower.program import ProgramChain
from tu_ops.lower.views import rederive
from tu_ops.printing import mapping_text, value_text
from visa.unlower import Underivable, retrace_stage

__all__ = ["expected_dma", "expected_program", "first_difference", "SKIPPED"]

# Fields filled by the allocation pass and checked against the allocation rules instead.
SKIPPED: dict[str, frozenset[str]] = {"trf_load": frozenset({"base_row"}), "commit": frozenset({"dest"}),
                                      "vrf_load": frozenset({"base"})}


# --- DMA ---------------------------------------------------------------------------------------

def expected_dma(op: Any, target: Any) -> Any:
    """The DmaOp `lower_dma` makes from `op`'s types, its DM-side bases offset by the
    allocations `op` carries (`src_alloc` / `dst_alloc`, from `with_facts`)."""
    src_t, dst_t = op.input_type, op.output_type
    if hasattr(op, "view_types"):  # dma_window / dma_into: the lowering's view builder
        return _expected_view_dma(op, target)
    cls = ir.ToHbm if getattr(dst_t, "kind", None) == "hbm" else ir.ToDm
    traced = cls(src=ir.Value(op.src.id, src_t), result=ir.Value(op.result.id, dst_t), loc=op.loc)
    try:
        low = lower_dma(traced, op.result.id, op.src.id, src_t, dst_t, target)
    except Exception as e:  # noqa: BLE001 - any failure of the builder means: not derivable
        raise Underivable(op, _reason(e)) from None
    src_off = _offset(src_t, op.src_alloc)
    dst_off = _offset(dst_t, op.dst_alloc)
    commands = tuple(attrs.evolve(c, src_base=c.src_base + src_off, dst_base=c.dst_base + dst_off)
                     for c in low.commands)
    return attrs.evolve(low, commands=commands, aggregate=None, src_alloc=op.src_alloc, dst_alloc=op.dst_alloc)


def _expected_view_dma(op: Any, target: Any) -> Any:
    try:
        return rederive(op, target, (_offset(op.input_type, op.src_alloc), _offset(op.output_type, op.dst_alloc)))
    except Exception as e:  # noqa: BLE001 - any failure of the builder means: not derivable
        raise Underivable(op, _reason(e)) from None


def _offset(t: Any, alloc: Any) -> int:
    """The allocation base the allocation pass adds to a DM side's addresses (0 for HBM)."""
    if getattr(t, "kind", None) != "dm" or alloc is None:
        return 0
    return alloc.base


# --- TU programs ------------------------------------------------------------------------------

def expected_program(program: Any, types: dict[int, Any], target: Any) -> list[tuple[Any, Any]]:
    """(record, re-derived record) for every record of `program`, in order. `types` maps a
    value id to its type (parameters and every record's result)."""
    ops = list(program.ops)
    if not ops or ops[0].MNEMONIC != "feed_buffer":
        raise Underivable(ops[0] if ops else None, "a program starts with its feed_buffer")
    fresh = itertools.count(-1, -1)
    traced = _traced(ops, types, target, fresh)
    chain = ProgramChain(tuple(op for group in traced for op in group))
    out = []
    for i, rec in enumerate(ops):
        prev = ops[i - 1].result.id if i else None
        try:
            out.append((rec, _lower(rec, i, prev, ops, traced[i], chain, types, program, target)))
        except Underivable:
            raise
        except Exception as e:  # noqa: BLE001 - any failure of the builder means: not derivable
            raise Underivable(rec, _reason(e)) from None
    return out


def _reason(e: Exception) -> str:
    return getattr(e, "detail", None) or str(e) or type(e).__name__


def _traced(ops: list[Any], types: dict[int, Any], target: Any, fresh: Iterator[int]) -> list[tuple[ir.Op, ...]]:
    """The traced ops each record stands for, rebuilt from the records' types: the feed
    becomes `begin, fetch, adapters..., collect`, a commit `commit_trim [commit_cast] commit`,
    every other record its one stage."""
    feed = ops[0]
    try:
        groups = [_traced_feed(feed, types, target, fresh)]
    except Underivable:
        raise
    except Exception as e:  # noqa: BLE001
        raise Underivable(feed, _reason(e)) from None
    prev = groups[0][-1].result
    for rec in ops[1:]:
        try:
            group = retrace_stage(rec, ir.Value(prev.id, rec.input_type), types, target, fresh)
        except Underivable:
            raise
        except Exception as e:  # noqa: BLE001
            raise Underivable(rec, _reason(e)) from None
        groups.append(group)
        prev = group[-1].result
    return groups


def _traced_feed(feed: Any, types: dict[int, Any], target: Any, fresh: Iterator[int]) -> tuple[ir.Op, ...]:
    src_t = types.get(feed.source.tensor.id)
    if getattr(src_t, "kind", None) != "dm":
        raise Underivable(feed, f"the feed reads {feed.source.tensor}, which is not a DM tensor")
    src_t = attrs.evolve(src_t, element=feed.source.element)  # a window of its tensor (docs/views.md)
    context = feed.context.value
    # `ctx.begin(view)`: Stream[D; Chip, Cluster, Slice; 1, Element] (npu_opt.context).
    begin_t = StreamType(src_t.dtype, src_t.chip, src_t.cluster, src_t.slice, IDENTITY, src_t.element, context)
    begin = ir.Begin(view=ir.Value(feed.source.tensor.id, src_t), context=context,
                     result=ir.Value(next(fresh), begin_t), loc=feed.loc)
    if feed.interleave is not None:  # `begin_interleaved(lhs, rhs, axis)` (ir.interleave_ops)
        second = ir.Value(feed.interleave.tensor.id, types.get(feed.interleave.tensor.id))
        begin = BeginInterleaved(view=begin.view, rhs=second, axis=feed.interleave.axis, context=context, loc=feed.loc,
                                 result=ir.Value(begin.result.id, attrs.evolve(begin_t, packet=feed.interleave.axis.pair(
                                     src_t.element))))
    fin = feed.input_type
    fetch = ir.Fetch(input=begin.result, time=fin.time, packet=fin.packet, result=ir.Value(next(fresh), fin))
    dtypes = feed.dtype_chain(target)
    if dtypes is None:
        raise Underivable(feed, f"the conversions {value_text(feed.conversions)} are not a legal adapter chain")
    ops: list[ir.Op] = [begin, fetch]
    cur = fetch.result
    for lift in feed.lift or ():  # the fetch lifts (ir.fetch_lift_ops), outermost first
        ops.append(_traced_lift(lift, cur, fresh))
        cur = ops[-1].result
    if feed.mask is not None:  # the Fetch Adapter's mask (ir.fetch_mask_ops)
        ops.append(_traced_mask(feed, cur, fresh))
        cur = ops[-1].result
    for conv, d in zip(feed.conversions, dtypes[1:]):
        value = ir.Value(next(fresh), attrs.evolve(cur.type, dtype=d))
        if conv.kind is ConversionKind.ZP_SUB:
            op = ir.FetchZeroPointSub(input=cur, dtype=d, zero_point=conv.zero_point, result=value)
        elif conv.kind.stage == "lookup":
            op = ir.FetchTableLookup(input=cur, dtype=d, result=value)
        else:
            op = ir.FetchCast(input=cur, dtype=d, result=value)
        ops.append(op)
        cur = value
    if feed.switch is not None:
        ops.append(_traced_switch(feed, cur, fresh))
        cur = ops[-1].result
    out = feed.output_type
    ops.append(ir.Collect(input=cur, time=out.time, packet=out.packet, result=ir.Value(feed.result.id, out)))
    return tuple(ops)


def _traced_lift(lift: Any, cur: ir.Value, fresh: Iterator[int]) -> Any:
    """The traced fetch lift one `lift=` item of a feed stands for."""
    op = LIFT_OPS[lift.dim](input=cur, out_placement=lift.placement, out_time=lift.time)
    return attrs.evolve(op, result=ir.Value(next(fresh), op.infer_type()))


def _traced_mask(feed: Any, cur: ir.Value, fresh: Iterator[int]) -> Any:
    """The traced `fetch_mask` a feed's `mask=` field stands for: every padding of its axis zeroed."""
    names = feed.mask.axis.axes()
    if len(names) != 1:
        raise Underivable(feed, f"the mask's axis {feed.mask.axis.text()} is not one axis")
    (axis,) = names
    time, packet = masked_mapping(cur.type.time, axis), masked_mapping(cur.type.packet, axis)
    return FetchMask(input=cur, out_time=time, out_packet=packet,
                     result=ir.Value(next(fresh), attrs.evolve(cur.type, time=time, packet=packet)))


def _traced_switch(feed: Any, cur: ir.Value, fresh: Iterator[int]) -> Switch:
    """The traced switch a feed's `switch=` field stands for (its config must be well formed)."""
    route = feed.switch
    try:
        config = route.variant()
    except (TypeError, ValueError) as e:
        raise Underivable(feed, f"switch config: {e}") from None
    out_t = attrs.evolve(cur.type, slice=route.out_slice, time=route.out_time)
    return Switch(input=cur, out_slice=route.out_slice, out_time=route.out_time, config=config,
                  result=ir.Value(next(fresh), out_t))


def _lower(rec: Any, i: int, prev: int | None, ops: list[Any], group: tuple[ir.Op, ...], chain: ProgramChain,
           types: dict[int, Any], program: Any, target: Any) -> Any:
    """The lowering's record for `rec`: the same builders `tu_ops.lower.build` finds for the
    stage (`tu_ops.lower.dispatch`), with ids and types as the records give them."""
    if rec.MNEMONIC == "feed_buffer":
        if len(ops) < 2:
            raise Underivable(rec, "the feed delivers to no op")
        second = rec.interleave.tensor if rec.interleave is not None else None
        low = lower_feed(chain, rec.result.id, ops[1].result.id, feed_flits(chain), rec.source.tensor,
                         rec.source.element, target, second)
        low = attrs.evolve(low, reshape=rec.reshape,   # a reshaped view's levels: FEED-15 checks them
                           start=rec.start, start_elems=rec.start_elems, start_limit=rec.start_limit)  # RUNTIME-8
        if mapping_text(rec.source.element) == mapping_text(types[rec.source.tensor.id].element):
            return low  # the whole tensor: offset 0
        return attrs.evolve(low, source=attrs.evolve(low.source, offset=rec.source.offset))  # a window: verify checks it
    if rec.MNEMONIC == "time_reduce" and chain.first(ir.ContractLane) is None:
        raise Underivable(rec, "a time_reduce without a lane_fold in its program")
    op = group[0]
    position = chain.after_collect().index(op)
    site = Site(chain, position, rec.result.id, prev, lambda v: v.id, lambda v: v.type, program.context, target)
    low = lower_stage(op, site)
    if rec.MNEMONIC == "commit" and rec.into is not None:  # into a tensor: CMT-5 checks the window
        low = attrs.evolve(low, into=rec.into, view=rec.view, offset=rec.offset, output_type=rec.output_type)
    return low


# --- comparison -------------------------------------------------------------------------------

def first_difference(found: Any, expected: Any) -> tuple[str, Any, Any] | None:
    """(field path, found value, expected value) of the first printed field where two records
    of one op differ, or None. Mappings compare by their text (visa/visa.lark rule 5); the
    allocation fields of `SKIPPED` are not compared."""
    skip = SKIPPED.get(found.MNEMONIC, frozenset())
    for (name, a), (_, b) in zip(found.fields(), expected.fields()):
        if name in skip:
            continue
        diff = _diff(name, a, b)
        if diff is not None:
            return diff
    return None


def _struct(v: Any) -> bool:
    return attrs.has(type(v)) and getattr(type(v), "TEXT_STYLE", None) in ("struct", "tuple")


def _diff(path: str, a: Any, b: Any) -> tuple[str, Any, Any] | None:
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        same = isinstance(a, Mapping) and isinstance(b, Mapping) and mapping_text(a) == mapping_text(b)
        return None if same else (path, a, b)
    if _struct(a) and type(a) is type(b):
        for f in attrs.fields(type(a)):
            diff = _diff(f"{path}.{f.name}", getattr(a, f.name), getattr(b, f.name))
            if diff is not None:
                return diff
        return None
    if (isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b)
            and any(_struct(x) for x in a)):
        for k, (x, y) in enumerate(zip(a, b)):
            diff = _diff(f"{path}[{k}]", x, y)
            if diff is not None:
                return diff
        return None
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return None if tuple(a) == tuple(b) else (path, a, b)
    return None if a == b else (path, a, b)
