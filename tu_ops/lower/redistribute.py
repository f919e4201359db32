"""A traced `Redistribute` lowered to a `RedistributeOp` (tu_ops/redistribute.py): the
lowering finds the plan's source window, parts and offsets, and the record its commands
(`tu_ops.dma_records.redistribute_record`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from tu_ops.lower.errors import LoweringRefusal, refusal
from tu_ops.lower.views import byte_offset
from tu_ops.dma_records import redistribute_record
from tu_ops.redistribute import RedistributeOp

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["lower_redistribute"]


def lower_redistribute(op: Any, result: int, windows: dict[int, Any], refs: dict[int, int], typ: Any,
                       target: Target) -> RedistributeOp:
    """The record of a trace-valid `Redistribute` whose result is `%result`."""
    w = windows.get(op.src.id)
    if w is None:
        storage_t, view_offset, src_ref = typ(op.src), 0, refs[op.src.id]
    else:
        storage_t, src_ref = typ(w.src), refs[w.src.id]
        if any(w.offset[:2]):
            raise _refuse(op, "a redistribution of a view shifted on its Chip or Cluster level is not lowered yet")
        view_offset = byte_offset(storage_t, w.offset, target, op, clusters=True)
    view_t = attrs.evolve(op.src.type, element=op.window)
    bits = target.bits_of(storage_t.dtype) or storage_t.dtype.bits
    clusters = storage_t.cluster.size
    sources = tuple(c * clusters + k for c, k in op.placements)
    offsets = tuple(cells * bits // 8 for cells in op.cell_offsets)
    into = None
    if op.into is not None:
        if any(op.offset[:2]):
            raise _refuse(op, "a redistribution into a view tiled on its Chip or Cluster level is not lowered yet")
        into = (refs[op.into.id], op.view.levels(), byte_offset(op.into.type, op.offset, target, op, clusters=True))
    return redistribute_record(result, src_ref, storage_t, view_t.levels(), view_offset, sources, offsets,
                               typ(op.result), op.engine, target, op.loc, into)


def _refuse(op: Any, message: str) -> LoweringRefusal:
    return LoweringRefusal([refusal("VIEW-10", message, op.loc, stage=op.STAGE, op=op.text(),
                                    help="redistribute into a fresh tensor (`to_dm`) and copy that")])
