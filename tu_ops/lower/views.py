"""Views and allocation lowered to `tensor_new`, `dma_window`, `dma_into` and `memset` (docs/views.md),
and a register-file relabel to `rf_reshape`.

A window's commands are those of a plain DMA between the view types, their addresses on the
window's side shifted by the view's byte offset (`tu_ops.dma_records.view_dma`): in HBM, the chip offset
times the bytes of one chip's copy plus the element offset in bytes; in DM, the slice
offset times DM_SLICE_BYTES plus the element offset in bytes. A write into a DM tensor
keeps the tensor's address (`tu_ops.dma_view.dm_roots`). A `begin` over an Element tile is
a feed whose source offset is the tile's element offset; one over an unshifted tile of the
outer levels feeds the tile's slices in place; one over a reshaped view names the levels
the reshape relabelled the tensor to (`reshape=`, tu_ops/feed_source.py). A `memset` of 4-bit cells fills whole bytes
(VIEW-14 keeps it so). A DM window shifted on its Chip or Cluster level moves its DMA
commands to those chips and clusters (`chip_shift`, `cluster_shift`). The trace refuses
what the hardware cannot do (VIEW-13, VIEW-14, VIEW-15); the lowering refuses (VIEW-10)
what it does not place yet: a window that does not start on a whole byte, a DM -> DM copy
between windows on different chips or clusters, a `memset` of a DM window shifted on its
Chip or Cluster level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir import ops as ir
from ir.rules.views import fill_pattern
from ir.rf_reshape import RfReshape
from ir.view_ops import Memset, NewTensor, ToView, Window
from tu_ops.rf_reshape import RfReshapeOp
from tu_ops.base import Ref
from tu_ops.dma_commands import lower_dma
from tu_ops.dma_records import spm_record, view_dma
from tu_ops.dma_view import DmaIntoOp, DmaWindowOp, MemsetOp, TensorNewOp
from tu_ops.lower.errors import LoweringRefusal, refusal
from ir.words import a_an

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["lower_view_step", "windows_of", "shift_feed", "byte_offset", "refuse_unplaced", "spm_window_step",
           "scatter_window", "runtime_start_fields"]


def _refuse(op: Any, message: str) -> LoweringRefusal:
    return LoweringRefusal([refusal("VIEW-10", message, op.loc, stage=op.STAGE, op=op.text(),
                                    help="copy through a fresh tensor instead (`to_dm` / `to_hbm` into a new type)")])


def byte_offset(t: Any, offsets: tuple[int, ...], target: Any, op: Any, clusters: bool = False) -> int:
    """The byte offset of a window of tensor type `t` shifted by `offsets` cells per level (a
    DM Chip or Cluster shift, when `clusters` allows it, moves the commands instead:
    `chip_shift`, `cluster_shift`)."""
    bits = target.bits_of(t.dtype) or t.dtype.bits
    *outer, elem = offsets
    if elem * bits % 8:
        raise _refuse(op, f"the window starts {elem} cells into the element, not a whole byte of {t.dtype}")
    if t.kind == "hbm":
        chip_bytes = -(-t.element.size * bits // 8)
        return outer[0] * chip_bytes + elem * bits // 8
    chip, cluster, slice_ = outer
    if (chip or cluster) and not clusters:
        raise _refuse(op, f"a memset of a DM window shifted on the {'Chip' if chip else 'Cluster'} level is not "
                          "lowered yet")
    return slice_ * target.constants.DM_SLICE_BYTES + elem * bits // 8


def _source(op: Any, windows: dict[int, Window], refs: dict[int, int], typ: Any, target: Any) -> tuple:
    """(ref, storage type, view type, byte offset, (chip, cluster) shift) of the tensor a DMA reads."""
    w = windows.get(op.src.id)
    if w is None:
        t = typ(op.src)
        return refs[op.src.id], t, t, 0, (0, 0)
    base_t = typ(w.src)
    shift = tuple(w.offset[:2]) if base_t.kind == "dm" else (0, 0)
    return refs[w.src.id], base_t, w.result.type, byte_offset(base_t, w.offset, target, op, clusters=True), shift


def runtime_start_fields(side: str, op: Any, refs: dict[int, int], target: Target) -> dict[str, Any]:
    """The record fields of the runtime start of the window `op` (a `window` or `to_view`) on
    `side`: the scalar, the bytes one step of it moves that side's addresses, the largest
    start (none without one)."""
    if op is None or op.start is None:
        return {}
    dtype = (op.src if isinstance(op, Window) else op.into).type.dtype
    step = op.start_stride * (target.bits_of(dtype) or dtype.bits) // 8
    return {f"{side}_start": Ref(refs[op.start.id]), f"{side}_start_bytes": step, f"{side}_start_limit": op.start_limit}


def _memset_start(op: Memset, refs: dict[int, int], target: Target) -> dict[str, Any]:
    """The `start=`, `start_bytes=`, `start_limit=` of a memset of a window at a runtime start."""
    if op.start is None:
        return {}
    bits = target.bits_of(op.into.type.dtype) or op.into.type.dtype.bits
    return {"start": Ref(refs[op.start.id]), "start_bytes": op.start_stride * bits // 8, "start_limit": op.start_limit}


def _shift(op: Any, src: tuple, dst_t: Any, dst_shift: tuple[int, int]) -> tuple[int, int]:
    """The one (Chip, Cluster) shift of a DMA's commands: a command serves one (chip, cluster)
    of both DM sides, so two DM sides must be shifted alike (a fresh tensor is not shifted)."""
    src_t, src_shift = src[1], src[4]
    if src_t.kind == "dm" and dst_t.kind == "dm" and src_shift != dst_shift:
        raise _refuse(op, f"a DM -> DM copy from (chip, cluster) offset {src_shift} to {dst_shift} "
                          "is not lowered yet")
    return src_shift if any(src_shift) else dst_shift


def windows_of(kernel: Any) -> dict[int, Window]:
    """Every `window` op of a traced kernel, by the id of its result."""
    return {w.result.id: w for w in kernel.ops if isinstance(w, Window)}


def lower_view_step(op: Any, result: int, windows: dict[int, Window], refs: dict[int, int], typ: Any,
                    target: Any) -> Any | None:
    """The record of a view or allocation step, or None for a plain DMA (`lower_dma`'s)."""
    if isinstance(op, RfReshape):  # a register-file relabel (tu_ops.rf_reshape)
        return RfReshapeOp.of_types(Ref(result), Ref(refs[op.input.id]), typ(op.input), typ(op.result), op.loc)
    if isinstance(op, NewTensor):
        t = op.result.type
        if t.kind not in ("hbm", "dm", "trf", "vrf"):
            raise _refuse(op, f"{a_an(t.kind)} tensor made by `new()` is not placed by the lowering yet")
        return TensorNewOp(result=Ref(result), element_type=t.dtype, input_type=t, output_type=t, loc=op.loc)
    if isinstance(op, Memset):
        t = op.into.type
        if (target.bits_of(t.dtype) or t.dtype.bits) % 4:
            raise _refuse(op, f"a memset of {t.dtype} cells (less than a byte) is not lowered yet")
        return MemsetOp(result=Ref(result), into=Ref(refs[op.into.id]), element_type=t.dtype, view=op.view.levels(),
                        offset=byte_offset(t, op.offset, target, op),
                        value=fill_pattern(op.value, t.dtype) & ((1 << t.dtype.bits) - 1),   # i4: the low nibble
                        input_type=t, output_type=t, loc=op.loc, **_memset_start(op, refs, target))
    if isinstance(op, ToView):
        source = _source(op, windows, refs, typ, target)
        src, src_t, src_view, src_off, _ = source
        dst_off = byte_offset(op.into.type, op.offset, target, op, clusters=True)
        shift = _shift(op, source, op.into.type, tuple(op.offset[:2]) if op.into.type.kind == "dm" else (0, 0))
        align = target.constants.DMA_DM_ALIGN
        if op.into.type.kind == "dm" and dst_off % align:
            raise _refuse(op, f"a write into DM starts {dst_off % target.constants.DM_SLICE_BYTES} bytes into "
                              f"the element, not on {a_an(align)}-byte boundary")
        return attrs.evolve(view_dma(DmaIntoOp, result, src, src_t, src_view, src_off, op.into.type, op.view, dst_off,
                                     target, op.loc, into=refs[op.into.id], shift=shift),
                            **runtime_start_fields("src", windows.get(op.src.id), refs, target),
                            **runtime_start_fields("dst", op, refs, target))
    if isinstance(op, (ir.ToDm, ir.ToHbm)) and op.src.id in windows:
        source = _source(op, windows, refs, typ, target)
        src, src_t, src_view, src_off, _ = source
        t = typ(op.result)
        return attrs.evolve(view_dma(DmaWindowOp, result, src, src_t, src_view, src_off, t, t, 0, target, op.loc,
                                     shift=_shift(op, source, t, (0, 0))),
                            **runtime_start_fields("src", windows.get(op.src.id), refs, target))
    return None


def spm_window_step(op: Any, result: int, windows: dict[int, Window], refs: dict[int, int], typ: Any,
                    target: Target) -> Any:
    """The `dma_spm` record of a `to_spm` reading a tile of a DM tensor: the tile's commands
    start at the window's byte offset in the tensor, which the record names (`src_view`,
    `src_offset`, and `src_start=` ... for a tile at a runtime start). A tile shifted on its Chip or Cluster level is refused (VIEW-10)."""
    ref, storage_t, view_t, offset, shift = _source(op, windows, refs, typ, target)
    if any(shift):
        raise _refuse(op, "`to_spm` of a DM view tiled on its Chip or Cluster level is not lowered yet")
    record = lower_dma(op, result, ref, view_t, op.result.type, target,
                       lambda *args: spm_record(*args, window=(storage_t, offset)))
    return attrs.evolve(record, **runtime_start_fields("src", windows.get(op.src.id), refs, target))


def scatter_window(op: Any, windows: dict[int, Window], refs: dict[int, int], typ: Any,
                   target: Target) -> tuple[int, tuple[Any, int], dict[str, Any]]:
    """(the tensor, (its type, the byte offset), the runtime start's fields) of a scatter out
    of a tile of a DM tensor; a tile shifted on its Chip or Cluster level is refused (VIEW-10)."""
    ref, storage_t, _, offset, shift = _source(op, windows, refs, typ, target)
    if any(shift):
        raise _refuse(op, "a scatter out of a DM view tiled on its Chip or Cluster level is not lowered yet")
    return ref, (storage_t, offset), runtime_start_fields("src", windows.get(op.src.id), refs, target)


def refuse_unplaced(kernel: Any) -> None:
    """VIEW-10 for a `begin` over a window shifted outside its Element level (a feed reads
    the slices of its program's space; its source offset shifts the element only; the
    trace refuses these first, VIEW-15, IR text read back can still hold one), and for an
    interleaved `begin` whose two views are not read alike and which does not say how far
    apart they are (`rhs_shift`, which the trace sets)."""
    windows = windows_of(kernel)
    for op in kernel.ops:
        w = windows.get(op.view.id) if isinstance(op, ir.Begin) else None
        if w is not None and any(w.offset[:-1]):
            raise _refuse(op, "`begin` over a DM view tiled outside its Element level is not lowered yet")
        rhs = getattr(op, "rhs", None) if isinstance(op, ir.Begin) else None
        if rhs is not None and op.rhs_shift is None and _window_start(windows.get(rhs.id)) != _window_start(w):
            raise _refuse(op, "an interleaved `begin` over two views tiled at different starts, without the distance "
                              "between them (`rhs_shift`), is not lowered")   # IR text read back: the trace names it


def _window_start(w: Window | None) -> tuple:
    """Where a feed reads a view: its window's cell offsets (none for a whole tensor or a
    window at offset 0) and runtime start."""
    if w is None:
        return (), None
    return (tuple(w.offset) if any(w.offset) else ()), None if w.start is None else (w.start.id, w.start_stride)


def shift_feed(feed: Any, view: Any, windows: dict[int, Window], refs: dict[int, int], begin: Any = None,
               target: Target | None = None) -> Any:
    """The feed of a `begin` over a window: its source offset is the window's element offset,
    a reshaped window names the levels it relabelled the tensor to (FEED-15), and one at a
    runtime start names its scalar (`start=`, moving the offset by `start * start_elems`).
    An interleaved `begin` whose second view is read elsewhere names where (`_second_view`)."""
    w = windows.get(view.id)
    if w is not None:
        reshape = None if w.reshaped is None else w.reshaped.levels()
        start = {} if w.start is None else {"start": Ref(refs[w.start.id]), "start_elems": w.start_stride,
                                             "start_limit": w.start_limit}
        feed = attrs.evolve(feed, source=attrs.evolve(feed.source, offset=w.offset[-1]), reshape=reshape, **start)
    if getattr(begin, "rhs_shift", None) is None:
        return feed
    return attrs.evolve(feed, **_second_view(feed, begin, w, windows.get(begin.rhs.id), refs, target))


def _second_view(feed: Any, begin: Any, w1: Window | None, w2: Window | None, refs: dict[int, int],
                 target: Target) -> dict[str, Any]:
    """The fields of an interleaved feed whose second view is read `begin.rhs_shift` cells past
    the first (a trace-time distance): the source offset and `rhs_offset=` where the two are
    read at start 0. At runtime starts (which move both alike) the walk's start is that of the
    view read lower, so both offsets at start 0 lie in their tensors, and `start_limit` is the
    largest start that keeps both views inside (each window's own limit). A distance that is
    not whole bytes, or starts the trace did not pair, is VIEW-10."""
    shift, dtype = begin.rhs_shift, feed.source.dtype
    if shift * (target.bits_of(dtype) or dtype.bits) % 8:
        raise _refuse(begin, f"the second view of an interleaved `begin` is read {shift} cells of {dtype} past the "
                             "first, not whole bytes")
    moving = [x for x in (w1, w2) if x is not None and x.start is not None]
    if not moving:
        lhs0 = 0 if w1 is None else w1.offset[-1]
        return {"source": attrs.evolve(feed.source, offset=lhs0), "rhs_offset": lhs0 + shift}
    if len(moving) == 1:
        raise _refuse(begin, "an interleaved `begin` over one view at a runtime start and one at a fixed start")
    lead, other = (w1, w2) if shift >= 0 else (w2, w1)   # the view read lower: its start is the walk's
    low = lead.offset[-1]
    lhs0, rhs0 = (low, low + shift) if shift >= 0 else (low - shift, low)
    other_last = other.offset[-1] + other.start_limit * other.start_stride   # the other view's last position
    limit = min(lead.start_limit, (other_last - low - abs(shift)) // lead.start_stride)
    if limit < 0:
        raise _refuse(begin, "the two views of an interleaved `begin` are never both inside their tensors")
    return {"source": attrs.evolve(feed.source, offset=lhs0), "rhs_offset": rhs0, "start": Ref(refs[lead.start.id]),
            "start_elems": lead.start_stride, "start_limit": limit}
