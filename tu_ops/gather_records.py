"""The record of a trace-valid `Gather` (a `GatherOp`), `Scatter` (a `ScatterOp`) or `Shuffle`
(a `ShuffleOp`), as its types fix it (tu_ops/gather.py, docs/machine/dma.md "Gather",
"Scatter"): what the lowering writes and the VISA verifier compares a parsed record with. A
scatter's commands read its data into rows in index order (`ir.scatter.virtual_rows`), as a
`to_hbm` would.

The row copy is the DMA of the gathered rows (`ir.gather.virtual_source`) into the DM
output (`tu_ops.dma_commands.lower_dma`); an unscaled index also gets the DM -> HBM commands that read
it into its logical order (`index_commands`). DM-side bases are relative to allocation 0;
the allocation pass adds them (the index's to `index_commands`' sources).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.errors import InternalError
from ir.gather import index_scratch
from ir.rules.gather import gather_parts
from ir.rules.scatter import scatter_parts
from ir.spm import spm_as_hbm
from ir.mapping.nodes import Symbol, pair_all
from ir.types import HbmType, SpmType
from tu_ops.base import Alloc, Ref
from tu_ops.gather import GatherOp, IndexMode, ScatterOp, ShuffleLevel, ShuffleOp
from tu_ops.dma_commands import lower_dma

__all__ = ["gather_record", "scatter_record", "shuffle_record"]


def gather_record(op: Any, result: int, src: int, index: int, target: Any, count: int | None = None) -> GatherOp:
    """The GatherOp of a trace-valid `Gather` whose result is `%result` (its runtime
    sparse prefix, if any, the scalar `%count`)."""
    parts = gather_parts(op)
    if not isinstance(parts, tuple):
        raise InternalError(f"{op.text()}: a refused gather reached the lowering ({parts.message})")
    shape, virtual = parts
    table_t, index_t, dst_t = op.src.type, op.index.type, op.result.type
    rows = lower_dma(op, result, src, virtual, dst_t, target)
    index_commands: tuple = ()
    if not op.scaled:
        scratch = index_scratch(index_t)
        stored_t = spm_as_hbm(index_t) if isinstance(index_t, SpmType) else index_t   # an SPM list reads as HBM
        read = lower_dma(op, result, index, stored_t, scratch, target)
        index_commands = read.commands
    bits = target.bits_of(table_t.dtype) or table_t.dtype.bits
    row_bytes = shape.row_cells * bits // 8
    outer = shape.outer_count
    return GatherOp(result=Ref(result), src=Ref(src), index=Ref(index), kind=rows.kind,
                    element_type=table_t.dtype, commands=rows.commands, input_type=table_t, output_type=dst_t,
                    mode=IndexMode.SCALED if op.scaled else IndexMode.UNSCALED, row_bytes=row_bytes,
                    rows=shape.rows, gathered=shape.index_count, index_commands=index_commands, prefix=op.prefix,
                    outer=outer if outer > 1 else None,
                    count=None if count is None else Ref(count),
                    src_alloc=Alloc(0, table_t.chip.size * outer * shape.rows * row_bytes), dst_alloc=None, loc=op.loc)


def scatter_record(op: Any, result: int, src: int, index: int, target: Any, into: int | None = None,
                   window: tuple[Any, int] | None = None) -> ScatterOp:
    """The ScatterOp of a trace-valid `Scatter` whose result is `%result` (written into
    `%into`, the lowered tensor of `op.into`, when it has one). `window` = (the DM tensor's
    type, byte offset) when `op.src` is a tile of it: the record names the tile (`src_view`,
    `src_offset`) and its commands start that many bytes in. A scatter into one page of
    `into` names the page (`dst_view`, `dst_offset`: its levels and first byte)."""
    parts = scatter_parts(op)
    if not isinstance(parts, tuple):
        raise InternalError(f"{op.text()}: a refused scatter reached the lowering ({parts.message})")
    shape, rows_t = parts
    data_t, out_t = op.src.type, op.result.type
    rows = lower_dma(op, result, src, data_t, rows_t, target)
    bits = target.bits_of(data_t.dtype) or data_t.dtype.bits
    row_bytes = shape.row_cells * bits // 8
    index_t = op.index.type
    mode, index_commands = None, None
    if isinstance(index_t, SpmType):   # positions in SPM: read into the key's order, as HBM bytes
        scratch = HbmType(index_t.dtype, index_t.chip, pair_all([Symbol(a, n) for a, n in shape.key]))
        read = lower_dma(op, result, index, spm_as_hbm(index_t), scratch, target)
        mode, index_commands = IndexMode.UNSCALED, read.commands
    outer = shape.outer_count
    commands, tile = rows.commands, {}
    if window is not None:
        storage_t, offset = window
        commands = tuple(attrs.evolve(c, src_base=c.src_base + offset) for c in commands)
        tile = {"src_view": data_t.levels(), "src_offset": offset}
    size = out_t.chip.size * outer * shape.rows * row_bytes
    if getattr(op, "view", None) is not None:   # into one page of `into`: its levels and first byte
        tile["dst_view"], tile["dst_offset"] = op.view.levels(), op.offset * bits // 8
        size = out_t.chip.size * -(-out_t.element.size * bits // 8)
    return ScatterOp(mode=mode, index_commands=index_commands, result=Ref(result), src=Ref(src), index=Ref(index), kind=rows.kind, element_type=data_t.dtype,
                     commands=commands, input_type=data_t if window is None else window[0], output_type=out_t,
                     row_bytes=row_bytes, **tile,
                     rows=shape.rows, scattered=shape.count, src_alloc=None, into=None if into is None else Ref(into),
                     outer=outer if outer > 1 else None, dst_alloc=Alloc(0, size), loc=op.loc)


def shuffle_record(op: Any, result: int, src: int, target: Any) -> ShuffleOp:
    """The ShuffleOp of a trace-valid `Shuffle`: the identity copy, an HBM command's source
    moved to the shuffled chip's copy."""
    t = op.src.type
    copy = lower_dma(op, result, src, t, t, target)
    commands = copy.commands
    pattern = op.sources
    if t.kind == "hbm":
        bits = target.bits_of(t.dtype) or t.dtype.bits
        chip_bytes = t.element.size * bits // 8
        commands = tuple(attrs.evolve(c, src_base=c.src_base + (pattern[c.part.chip] - c.part.chip) * chip_bytes)
                         for c in commands)
    level = ShuffleLevel.CHIP if op.level == "chip" else ShuffleLevel.CLUSTER
    return ShuffleOp(result=Ref(result), src=Ref(src), kind=copy.kind, element_type=t.dtype, commands=commands,
                     input_type=t, output_type=t, level=level, pattern=pattern,
                     src_alloc=copy.src_alloc, dst_alloc=copy.dst_alloc, loc=op.loc)
