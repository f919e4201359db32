"""Re-derive a `dma_redistribute` record from its types and plan fields (as `visa.relower`
does for `dma`): the record its fields fix (`tu_ops.dma_records.redistribute_record`), its DM-side
addresses then offset by the allocations the verifier derived; a `dma_relayout` record from
its two types and its windows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir import ops as ir
from tu_ops.dma_records import redistribute_record, relayout_record
from visa.relower import Underivable

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["expected_redistribute", "expected_relayout"]


def expected_redistribute(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Target) -> Any:
    """The RedistributeOp `op`'s types, views, sources and offsets fix, at
    the allocations its facts name (a write into a view: at its tensor's)."""
    src, dst = _base(op.src_alloc), _base(op.dst_alloc)
    try:
        into = None if op.into is None else (op.into.id, op.dst_view, op.dst_offset)
        low = redistribute_record(op.result.id, op.src.id, op.input_type, op.src_view, op.src_offset, op.sources,
                                  op.offsets, op.output_type, op.engine, target, op.loc, into)
    except Exception as e:  # noqa: BLE001 - any failure of the builder means: not derivable
        raise Underivable(op, str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    commands = tuple(attrs.evolve(c, src_base=c.src_base + src, dst_base=c.dst_base + dst) for c in low.commands)
    return attrs.evolve(low, commands=commands, aggregate=None, src_alloc=op.src_alloc, dst_alloc=op.dst_alloc)


def _base(alloc: Any) -> int:
    return 0 if alloc is None else alloc.base


def expected_relayout(op: Any, types: dict[int, Any], dm_base: dict[int, int], target: Target) -> Any:
    """The DmaRelayoutOp the lowering makes from `op`'s two types, and its windows when it
    reads or writes one (the copy checked as one into a fresh tensor of the write view's type)."""
    src_t, dst_t = op.view_types()
    traced = ir.ToDm(src=ir.Value(op.src.id, src_t), result=ir.Value(op.result.id, dst_t), loc=op.loc)
    found = traced.check()
    if found is not None:
        raise Underivable(op, f"[{found.code}] {found.message}")
    into = None if op.into is None else (op.into.id, op.dst_view, op.dst_offset)
    try:
        low = relayout_record(op.result.id, op.src.id, op.input_type, op.output_type, target, op.loc,
                              op.src_view, op.src_offset or 0, into)
    except Exception as e:  # noqa: BLE001 - any failure of the builder means: not derivable
        raise Underivable(op, str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    return _moved(op, low, dm_base)


def _moved(op: Any, low: Any, dm_base: dict[int, int]) -> Any:
    src, dst = dm_base.get(op.src.id, 0), dm_base.get(op.result.id, 0)
    commands = tuple(attrs.evolve(c, src_base=c.src_base + src, dst_base=c.dst_base + dst) for c in low.commands)
    return attrs.evolve(low, commands=commands, aggregate=None, src_alloc=op.src_alloc, dst_alloc=op.dst_alloc)
