"""The records of the DMA-like steps as their types and fields fix them: what the lowering
writes, and what the VISA verifier (`visa.relower*`) compares a parsed record with. Each is
the plain DMA between two types (`tu_ops.dma_commands.dma_record`), seen through views, an
SPM store or a redistribution plan. (The interpreter reads the records and never loads this.)

A window's commands (`view_dma`) are those of the DMA between the view types, their addresses
on the window's side shifted by the view's byte offset and their (chip, cluster) by its Chip
and Cluster offsets. A redistribution's (`redistribute_record`) are those of the copy from the
source viewed through the plan's window into the result, each target part's sources moved by
the target's offset. A relayout (`relayout_record`) is the copy from the source seen as one
part whose slices are the source's (chip, cluster, slice) positions, outer first; each command
is then split (its outer loops peeled, outermost first) until its source walk stays inside one
part, and its source addresses become that part's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ir.errors import InternalError
from ir.mapping.nodes import IDENTITY, pair_all
from ir.spm import spm_as_hbm
from tu_ops.base import Ref
from tu_ops.dma import DmaCommand, DmaOp, moved
from tu_ops.dma_commands import dma_record
from tu_ops.dma_view import DmaIntoOp, with_levels
from tu_ops.redistribute import DmaRelayoutOp, RedistributeOp

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["view_dma", "view_record", "spm_record", "redistribute_record", "crosses_parts", "relayout_record"]


def view_dma(cls: type, result: int, src: int, src_t: Any, src_view: Any, src_off: int, dst_t: Any,
             dst_view: Any, dst_off: int, target: Any, loc: Any, into: int | None = None,
             shift: tuple[int, int] = (0, 0)) -> DmaOp:
    """The record of a DMA between view types, its addresses shifted by the offsets and its
    commands' (chip, cluster) by `shift` (the Chip and Cluster offsets of its DM windows)."""
    low = dma_record(Ref(result), Ref(src), src_view, dst_view, target, loc)
    commands = tuple(attrs.evolve(c, src_base=c.src_base + src_off, dst_base=c.dst_base + dst_off,
                                  part=(c.part.chip + shift[0], c.part.cluster + shift[1], c.part.dmn))
                     for c in low.commands)
    fields = {f.name: getattr(low, f.name) for f in attrs.fields(DmaOp) if f.init}
    fields.update(commands=commands, aggregate=None, input_type=src_t, output_type=dst_t,
                  src_view=src_view.levels(), src_offset=src_off, chip_shift=shift[0] or None,
                  cluster_shift=shift[1] or None)
    if cls is DmaIntoOp:
        fields.update(into=Ref(into), dst_view=dst_view.levels(), dst_offset=dst_off,
                      dst_alloc=low.dst_alloc and attrs.evolve(low.dst_alloc, size=_hbm_bytes(dst_t, target)))
    return cls(**fields)


def _hbm_bytes(t: Any, target: Any) -> int:
    return t.chip.size * -(-t.element.size * (target.bits_of(t.dtype) or t.dtype.bits) // 8)


def view_record(op: Any, target: Any, dm_offsets: tuple[int, int]) -> DmaOp:
    """The record a `dma_window` / `dma_into` record's types and views fix (`view_dma`),
    its DM-side addresses offset by `dm_offsets` (source, destination allocation bases)."""
    src_view, dst_view = op.view_types()
    into = op.into.id if isinstance(op, DmaIntoOp) else None
    out = view_dma(type(op), op.result.id, op.src.id, op.input_type, src_view, op.src_offset + dm_offsets[0],
                   op.output_type, dst_view, getattr(op, "dst_offset", 0) + dm_offsets[1], target, op.loc, into=into,
                   shift=(op.chip_shift or 0, op.cluster_shift or 0))
    offsets = {"src_offset": op.src_offset} | ({"dst_offset": op.dst_offset} if into is not None else {})
    starts = {f.name: getattr(op, f.name) for f in attrs.fields(type(op)) if "_start" in f.name}
    return attrs.evolve(out, src_alloc=op.src_alloc, dst_alloc=op.dst_alloc, **offsets, **starts)


def spm_record(result: Ref, src: Ref, src_t: Any, dst_t: Any, target: Target, loc: Any = None,
               window: tuple[Any, int] | None = None) -> Any:
    """The SpmDmaOp copying `src_t` into `dst_t`, one of them in SPM: the commands of the DMA
    between the DM side and the SPM's HBM-like store (`ir.spm.spm_as_hbm`), DM-side bases
    relative to allocation 0. `window` = (the DM tensor's type, byte offset) when `src_t` is
    a tile of it that `to_spm` reads: the record names the tile (`src_view`, `src_offset`) and
    its commands start that many bytes in."""
    from tu_ops.spm import SpmDmaOp  # a kernel's first SPM move loads its record class

    into_spm = dst_t.kind == "spm"
    copy = dma_record(result, src, src_t if into_spm else spm_as_hbm(src_t),
                      spm_as_hbm(dst_t) if into_spm else dst_t, target, loc)
    commands, tile = copy.commands, {}
    if window is not None:
        storage_t, offset = window
        commands = tuple(attrs.evolve(c, src_base=c.src_base + offset) for c in commands)
        tile = {"src_view": src_t.levels(), "src_offset": offset}
        src_t = storage_t
    return SpmDmaOp(result=result, src=src, kind=copy.kind, element_type=src_t.dtype, commands=commands,
                    input_type=src_t, output_type=dst_t, src_alloc=copy.src_alloc, dst_alloc=copy.dst_alloc, loc=loc,
                    **tile)


def redistribute_record(result: int, src: int, storage_t: Any, view_levels: tuple, view_offset: int,
                        sources: tuple[int, ...], offsets: tuple[int, ...], dst_t: Any, engine: Any,
                        target: Target, loc: Any = None, into: Any = None) -> RedistributeOp:
    """The record of a redistribution from `storage_t` read as `view_levels` (`view_offset`
    bytes in), target t taking part `sources[t]` at `offsets[t]` bytes more; `into` =
    (tensor number, write view levels, byte offset) for a `to_dm_view`, `dst_t` its tensor's type."""
    view_t = with_levels(storage_t, tuple(view_levels))
    dst_view = dst_t if into is None else with_levels(dst_t, tuple(into[1]))
    low = dma_record(Ref(result), Ref(src), view_t, dst_view, target, loc)
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


def crosses_parts(src_t: Any, dst_t: Any) -> bool:
    """A DM -> DM copy whose Chip, Cluster or number of slices changes."""
    return src_t.kind == dst_t.kind == "dm" and not (
        src_t.chip.equivalent(dst_t.chip) and src_t.cluster.equivalent(dst_t.cluster)
        and src_t.slice.size == dst_t.slice.size)


def _per_part(cmd: DmaCommand, part_bytes: int) -> list[tuple[int, DmaCommand]]:
    """(source part, command with part-local source addresses), the command split until each
    piece reads one part: by its loop of the widest source stride first (the one that steps
    from part to part), so the loops inside a part stay loops of one command."""
    low = cmd.src_base + sum(min(0, (e.size - 1) * e.src_stride) for e in cmd.entries)
    high = cmd.src_base + sum(max(0, (e.size - 1) * e.src_stride) for e in cmd.entries)
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


def relayout_record(result: int, src: int, src_t: Any, dst_t: Any, target: Target, loc: Any = None,
                    src_view: tuple | None = None, src_offset: int = 0, into: Any = None) -> DmaRelayoutOp:
    """The record of a DM -> DM copy between `src_t` and `dst_t` (`crosses_parts`): a `to_dm`,
    or one that reads the window `src_view` of `src_t` (`src_offset` bytes into each part)
    and, with `into` = (tensor number, write view levels, byte offset), writes a window of
    the tensor `dst_t` (a `to_dm_view`)."""
    view_t = src_t if src_view is None else with_levels(src_t, tuple(src_view))
    dst_view = dst_t if into is None else with_levels(dst_t, tuple(into[1]))
    flat = attrs.evolve(view_t, chip=IDENTITY, cluster=IDENTITY,
                        slice=pair_all([view_t.chip, view_t.cluster, view_t.slice]))
    low = dma_record(Ref(result), Ref(src), flat, dst_view, target, loc)
    part_bytes = src_t.slice.size * target.constants.DM_SLICE_BYTES
    dst_offset = 0 if into is None else into[2]
    pieces = [p for cmd in moved(low.commands, src_offset, dst_offset) for p in _per_part(cmd, part_bytes)]
    fields = {f.name: getattr(low, f.name) for f in attrs.fields(DmaOp) if f.init}
    fields.update(commands=tuple(c for _, c in pieces), aggregate=None, input_type=src_t, output_type=dst_t)
    if src_view is not None:
        fields.update(src_view=view_t.levels(), src_offset=src_offset)
    if into is not None:
        fields.update(into=Ref(into[0]), dst_view=dst_view.levels(), dst_offset=dst_offset)
    return DmaRelayoutOp(sources=tuple(p for p, _ in pieces), **fields)