"""Re-derive a `dma_redistribute` record from its types and plan fields (as `visa.relower`
does for `dma`): the record its fields fix (`tu_ops.dma_records.redistribute_record`), its DM-side
addresses then offset by the allocations the verifier derived; a `dma_relayout` record from
its two types and its windows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir import ops as ir
from tu_ops.dma_records import redistribute_record, relayout_record
from visa.relower import built, placed

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["expected_redistribute", "expected_relayout"]


def expected_redistribute(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Target) -> Any:
    """The RedistributeOp `op`'s types, views, sources and offsets fix, at
    the allocations its facts name (a write into a view: at its tensor's)."""
    into = None if op.into is None else (op.into.id, op.dst_view, op.dst_offset)
    low = built(op, lambda: redistribute_record(op.result.id, op.src.id, op.input_type, op.src_view,
                                                op.src_offset, op.sources, op.offsets, op.output_type, op.engine,
                                                target, op.loc, into))
    return placed(op, low, *(0 if a is None else a.base for a in (op.src_alloc, op.dst_alloc)))


def expected_relayout(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Target) -> Any:
    """The DmaRelayoutOp the lowering makes from `op`'s two types, and its windows when it
    reads or writes one (the copy checked as one into a fresh tensor of the write view's type)."""
    src_t, dst_t = op.view_types()
    traced = ir.ToDm(src=ir.Value(op.src.id, src_t), result=ir.Value(op.result.id, dst_t), loc=op.loc)
    into = None if op.into is None else (op.into.id, op.dst_view, op.dst_offset)
    low = built(op, lambda: relayout_record(op.result.id, op.src.id, op.input_type, op.output_type, target, op.loc,
                                            op.src_view, op.src_offset or 0, into), traced)
    return placed(op, low, dm_base.get(op.src.id, 0), dm_base.get(op.result.id, 0))
