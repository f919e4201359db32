"""A traced `Redistribute` lowered to a `RedistributeOp` (tu_ops/redistribute.py).

The commands are `lower_dma`'s for a copy from the source viewed through the plan's window
into the result; each target part's command sources then move by the target's offset (the
selected positions, in bytes) on top of the view's own, and `sources` names the part each
target reads. DM-side bases are relative to allocation 0 (the allocation pass adds them).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir import ops as ir
from tu_ops.dma import DmaOp
from tu_ops.dma_view import with_levels
from tu_ops.lower.dma import lower_dma
from tu_ops.lower.errors import LoweringRefusal, refusal
from tu_ops.lower.views import byte_offset
from tu_ops.redistribute import RedistributeOp

__all__ = ["lower_redistribute", "redistribute_record"]


def redistribute_record(result: int, src: int, storage_t: Any, view_levels: tuple, view_offset: int,
                        sources: tuple[int, ...], offsets: tuple[int, ...], dst_t: Any, engine: str,
                        target: Any, loc: Any = None) -> RedistributeOp:
    """The record of a redistribution from `storage_t` read as `view_levels` (`view_offset`
    bytes in), target t taking part `sources[t]` at `offsets[t]` bytes more."""
    view_t = with_levels(storage_t, tuple(view_levels))
    traced = ir.ToDm(src=ir.Value(src, view_t), result=ir.Value(result, dst_t), loc=loc)
    low = lower_dma(traced, result, src, view_t, dst_t, target)
    clusters = storage_t.cluster.size
    commands = tuple(attrs.evolve(c, src_base=c.src_base + view_offset + offsets[c.part.chip * clusters + c.part.cluster])
                     for c in low.commands)
    fields = {f.name: getattr(low, f.name) for f in attrs.fields(DmaOp) if f.init}
    fields.update(commands=commands, aggregate=None, input_type=storage_t, output_type=dst_t,
                  src_view=view_t.levels(), src_offset=view_offset, sources=tuple(sources),
                  offsets=tuple(offsets), engine=engine)
    return RedistributeOp(**fields)


def lower_redistribute(op: Any, result: int, windows: dict[int, Any], refs: dict[int, int], typ: Any,
                       target: Any) -> RedistributeOp:
    """The record of a trace-valid `Redistribute` whose result is `%result`."""
    w = windows.get(op.src.id)
    if w is None:
        storage_t, view_offset, src_ref = typ(op.src), 0, refs[op.src.id]
    else:
        storage_t, src_ref = typ(w.src), refs[w.src.id]
        if any(w.offset[:2]):
            raise LoweringRefusal([refusal("VIEW-10", "a redistribution of a view shifted on its Chip or Cluster "
                                                      "level is not lowered yet", op.loc, stage=op.STAGE,
                                           op=op.text(), help="redistribute the whole tensor and slice the result")])
        view_offset = byte_offset(storage_t, w.offset, target, op, clusters=True)
    view_t = attrs.evolve(op.src.type, element=op.window)
    bits = target.bits_of(storage_t.dtype) or storage_t.dtype.bits
    clusters = storage_t.cluster.size
    sources = tuple(c * clusters + k for c, k in op.placements)
    offsets = tuple(cells * bits // 8 for cells in op.cell_offsets)
    return redistribute_record(result, src_ref, storage_t, view_t.levels(), view_offset, sources, offsets,
                               typ(op.result), op.engine, target, op.loc)

