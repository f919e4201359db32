"""A traced `Redistribute` lowered to a `RedistributeOp`, and a DM -> DM `to_dm` across chips
or clusters to a `DmaRelayoutOp` (tu_ops/redistribute.py).

The commands are `lower_dma`'s for a copy from the source viewed through the plan's window
into the result; each target part's command sources then move by the target's offset (the
selected positions, in bytes) on top of the view's own, and `sources` names the part each
target reads. DM-side bases are relative to allocation 0 (the allocation pass adds them).

A relayout is `lower_dma`'s copy from the source seen as one part whose slices are the
source's (chip, cluster, slice) positions, outer first: its addresses run over every part.
Each command is then split (its outer loops peeled, outermost first) until its source walk
stays inside one part, and its source addresses become that part's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir import ops as ir
from ir.errors import InternalError
from ir.mapping.cells import Padding
from ir.mapping.nodes import IDENTITY, pair_all
from tu_ops.base import Ref
from tu_ops.dma import DmaCommand, DmaOp
from ir.view_ops import ToView
from tu_ops.dma_view import with_levels
from tu_ops.lower.dma import lower_dma
from tu_ops.lower.errors import LoweringRefusal, refusal
from tu_ops.lower.views import byte_offset
from tu_ops.redistribute import DmaRelayoutOp, RedistributeOp

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["lower_redistribute", "redistribute_record", "crosses_parts", "relayout_record", "relayout_view_step"]


def redistribute_record(result: int, src: int, storage_t: Any, view_levels: tuple, view_offset: int,
                        sources: tuple[int, ...], offsets: tuple[int, ...], dst_t: Any, engine: Any,
                        target: Target, loc: Any = None, into: Any = None) -> RedistributeOp:
    """The record of a redistribution from `storage_t` read as `view_levels` (`view_offset`
    bytes in), target t taking part `sources[t]` at `offsets[t]` bytes more; `into` =
    (tensor number, write view levels, byte offset) for a `to_dm_view`, `dst_t` its tensor's type."""
    view_t = with_levels(storage_t, tuple(view_levels))
    dst_view = dst_t if into is None else with_levels(dst_t, tuple(into[1]))
    traced = ir.ToDm(src=ir.Value(src, view_t), result=ir.Value(result, dst_view), loc=loc)
    low = lower_dma(traced, result, src, view_t, dst_view, target)
    clusters = storage_t.cluster.size
    dst_off = 0 if into is None else into[2]
    commands = tuple(attrs.evolve(c, src_base=c.src_base + view_offset + offsets[c.part.chip * clusters + c.part.cluster],
                                  dst_base=c.dst_base + dst_off) for c in low.commands)
    fields = {f.name: getattr(low, f.name) for f in attrs.fields(DmaOp) if f.init}
    fields.update(commands=commands, aggregate=None, input_type=storage_t, output_type=dst_t,
                  src_view=view_t.levels(), src_offset=view_offset, sources=tuple(sources),
                  offsets=tuple(offsets), engine=engine)
    if into is not None:
        fields.update(into=Ref(into[0]), dst_view=dst_view.levels(), dst_offset=dst_off)
    return RedistributeOp(**fields)


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



def crosses_parts(src_t: Any, dst_t: Any) -> bool:
    """A DM -> DM copy whose Chip, Cluster or number of slices changes."""
    return src_t.kind == dst_t.kind == "dm" and not (
        src_t.chip.equivalent(dst_t.chip) and src_t.cluster.equivalent(dst_t.cluster)
        and src_t.slice.size == dst_t.slice.size)


def _walk_range(cmd: DmaCommand) -> tuple[int, int]:
    low = cmd.src_base + sum(min(0, (e.size - 1) * e.src_stride) for e in cmd.entries)
    high = cmd.src_base + sum(max(0, (e.size - 1) * e.src_stride) for e in cmd.entries)
    return low, high


def _per_part(cmd: DmaCommand, part_bytes: int) -> list[tuple[int, DmaCommand]]:
    """(source part, command with part-local source addresses), the command split until each
    piece reads one part: by its loop of the widest source stride first (the one that steps
    from part to part), so the loops inside a part stay loops of one command."""
    low, high = _walk_range(cmd)
    if low // part_bytes == high // part_bytes:
        part = low // part_bytes
        return [(part, attrs.evolve(cmd, src_base=cmd.src_base - part * part_bytes))]
    outer = [k for k, e in enumerate(cmd.entries[:-1]) if e.size > 1]
    if not outer:
        raise InternalError(f"a DMA packet of {cmd.packet_bytes} bytes crosses two source parts")
    k = max(outer, key=lambda j: abs(cmd.entries[j].src_stride))  # the loop stepping across parts, most likely
    e = cmd.entries[k]
    rest = cmd.entries[:k] + cmd.entries[k + 1:]
    out = []
    for i in range(e.size):
        piece = attrs.evolve(cmd, src_base=cmd.src_base + i * e.src_stride, dst_base=cmd.dst_base + i * e.dst_stride,
                             entries=rest)
        out += _per_part(piece, part_bytes)
    return out


def relayout_record(op: Any, result: int, src: int, src_t: Any, dst_t: Any, target: Target,
                    src_view: tuple | None = None, src_offset: int = 0, into: Any = None) -> DmaRelayoutOp:
    """The record of a DM -> DM copy between `src_t` and `dst_t` (`crosses_parts`): a `to_dm`,
    or one that reads the window `src_view` of `src_t` (`src_offset` bytes into each part)
    and, with `into` = (tensor number, write view levels, byte offset), writes a window of
    the tensor `dst_t` (a `to_dm_view`)."""
    view_t = src_t if src_view is None else with_levels(src_t, tuple(src_view))
    dst_view = dst_t if into is None else with_levels(dst_t, tuple(into[1]))
    flat = attrs.evolve(view_t, chip=IDENTITY, cluster=IDENTITY,
                        slice=pair_all([view_t.chip, view_t.cluster, view_t.slice]))
    low = lower_dma(ir.ToDm(src=ir.Value(src, flat), result=ir.Value(result, dst_view), loc=op.loc),
                    result, src, flat, dst_view, target)
    part_bytes = src_t.slice.size * target.constants.DM_SLICE_BYTES
    dst_offset = 0 if into is None else into[2]
    moved = (attrs.evolve(c, src_base=c.src_base + src_offset, dst_base=c.dst_base + dst_offset) for c in low.commands)
    pieces = [p for cmd in moved for p in _per_part(cmd, part_bytes)]
    fields = {f.name: getattr(low, f.name) for f in attrs.fields(DmaOp) if f.init}
    fields.update(commands=tuple(c for _, c in pieces), aggregate=None, input_type=src_t, output_type=dst_t)
    if src_view is not None:
        fields.update(src_view=view_t.levels(), src_offset=src_offset)
    if into is not None:
        fields.update(into=Ref(into[0]), dst_view=dst_view.levels(), dst_offset=dst_offset)
    return DmaRelayoutOp(sources=tuple(p for p, _ in pieces), **fields)


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
    return relayout_record(op, result, src_ref, storage_t, dst_t, target, src_view, src_offset, into)


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
