"""A traced `Redistribute` lowered to a `RedistributeOp` (tu_ops/redistribute.py): the
lowering finds the plan's source window, parts and offsets, and the record its commands
(`tu_ops.dma_records.redistribute_record`), and the runtime start of a tile it reads or
writes (`src_start=` ..., `dst_start=` ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir import ops as ir
from ir.mapping.cells import Padding
from ir.view_ops import ToView
from tu_ops.lower.errors import LoweringRefusal, refusal
from tu_ops.lower.views import byte_offset, runtime_start_fields
from tu_ops.dma_records import redistribute_record, relayout_record
from tu_ops.redistribute import DmaRelayoutOp, RedistributeOp

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["lower_redistribute", "relayout_view_step"]


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
    record = redistribute_record(result, src_ref, storage_t, view_t.levels(), view_offset, sources, offsets,
                                 typ(op.result), op.engine, target, op.loc, into)
    return attrs.evolve(record, **runtime_start_fields("src", w, refs, target),   # tiles at runtime starts
                        **runtime_start_fields("dst", op, refs, target))


def _refuse(op: Any, message: str) -> LoweringRefusal:
    return LoweringRefusal([refusal("VIEW-10", message, op.loc, stage=op.STAGE, op=op.text(),
                                    help="redistribute into a fresh tensor (`to_dm`) and copy that")])


def relayout_view_step(op: Any, result: int, windows: dict[int, Any], refs: dict[int, int], typ: Any,
                       target: Target) -> DmaRelayoutOp | None:
    """The relayout record of a DM -> DM `to_dm` from a window, or `to_dm_view`, whose copy
    crosses chips or clusters (`crosses_parts` between the two view types); None for any other
    step. A window moved on its Chip or Cluster level, or narrowed on its Slice level, is
    refused (VIEW-10): the copy reads every part's slices as one run."""
    to_view = isinstance(op, ToView)
    if not (to_view or (isinstance(op, ir.ToDm) and op.src.id in windows)):
        return None
    w = windows.get(op.src.id)
    storage_t = typ(op.src) if w is None else typ(w.src)
    view_t = typ(op.src) if w is None else w.result.type
    dst_view = op.view if to_view else typ(op.result)
    if storage_t.kind != "dm" or dst_view.kind != "dm" or not _moves_parts(view_t, dst_view):
        return None
    if w is not None and (any(w.offset[:2]) or view_t.slice.size != storage_t.slice.size or w.start is not None):
        raise _refuse_relayout(op, "a copy across chips or clusters from a window tiled or moved outside its Element")
    if to_view and (any(op.offset[:2]) or op.start is not None):
        raise _refuse_relayout(op, "a copy across chips or clusters into a window moved on its Chip or Cluster "
                                   "level or at a runtime start")
    src_ref = refs[op.src.id if w is None else w.src.id]
    src_view = None if w is None else view_t.levels()
    src_offset = 0 if w is None else byte_offset(storage_t, w.offset, target, op, clusters=True)
    into = None
    if to_view:
        into = (refs[op.into.id], op.view.levels(), byte_offset(op.into.type, op.offset, target, op, clusters=True))
    dst_t = op.into.type if to_view else typ(op.result)
    return relayout_record(result, src_ref, storage_t, dst_t, target, op.loc, src_view, src_offset, into)


def _moves_parts(a: Any, b: Any) -> bool:
    """Two DM view types whose (chip, cluster) parts hold different cells or whose numbers of
    slices differ: a copy between them moves data across parts. The padding kind of a
    part (a read tile's `#`, a write tile's `#{!}`) does not move anything."""
    if a.slice.size != b.slice.size:
        return True
    for x, y in ((a.chip, b.chip), (a.cluster, b.cluster)):
        if x.size != y.size:
            return True
        for p in range(x.size):
            cx, cy = x.cell(p), y.cell(p)
            if isinstance(cx, Padding) != isinstance(cy, Padding) or (not isinstance(cx, Padding) and cx != cy):
                return True
    return False


def _refuse_relayout(op: Any, message: str) -> LoweringRefusal:
    return LoweringRefusal([refusal("VIEW-10", f"{message} is not lowered yet", op.loc, stage=op.STAGE, op=op.text(),
                                    help="copy the whole tensor across (`to_dm` into a fresh tensor), then tile that")])
