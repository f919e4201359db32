"""`dma_gather` and `dma_scatter` records (tu_ops/gather.py): read the index, move the rows it names.

A scatter runs the other way: its `commands` read the DM data into rows (as a DM -> HBM
`dma` does), every live chip's byte offsets are checked (SCATTER-6), and the rows are
written in index order into a zeroed output, so the last write of a repeated offset wins.


Every live chip's index values are read as little-endian i32 (a scaled index from its HBM
tensor; an unscaled one from DM through the record's `index_commands`, run as a DM -> HBM
DMA), checked (GATHER-6: the offending index is named, nothing is written), and turned into
table rows of `row_bytes` bytes. The rows, one after another per chip, are the source the
record's `commands` then write into the DM result exactly as a `dma` record does. With
`outer=n` the table (a scatter's output) is n blocks of `rows` rows, and every index value
moves one row of each block.

`dma_redistribute` and `dma_relayout` records (tu_ops/redistribute.py), and a DM `dma_shuffle`:
every command copies from the DM of its source part (`command_source`) into its own part.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.dtypes import DType
from ir.gather import gather_shape, index_fault, index_scratch, virtual_source
from ir.gather_prefix import prefix_length
from ir.scatter import scatter_shape, virtual_rows
from ir.mapping.nodes import Symbol, pair_all
from ir.spm import positions_axes, spm_as_hbm
from ir.types import HbmType
from tu_ops.base import Ref
from tu_ops.dma import DmaOp
from tu_ops.dma_view import DmaWindowOp
from tu_ops.enums import DmaKind
from visa.interp.dma import DmTensor, copy_strided, copy_walk, live_parts, run_dma, start_bytes, tensor_bytes
from visa.interp.errors import check
from visa.interp import shortcuts
from visa.interp.shortcuts import per_record
from visa.interp.memory import Memory
from visa.interp.values import from_bytes, pad_mask

__all__ = ["run_gather", "run_scatter", "run_shuffle", "run_redistribute"]


def _index_bytes(op: Any, mem: Memory, env: dict[int, Any], index_t: Any, scratch_t: Any) -> np.ndarray:
    """The index values of every chip position in logical order, as HBM bytes."""
    if not op.index_commands:
        data = env.get(op.index.id)
        check(isinstance(data, np.ndarray), f"the scaled index {op.index} is not an HBM tensor", op)
        return data
    spm = index_t.kind == "spm"   # an SPM list is stored, and read, as HBM bytes (ir.spm.spm_as_hbm)
    read = DmaOp(result=Ref(op.result.id), src=op.index, kind=DmaKind.HBM_TO_HBM if spm else DmaKind.DM_TO_HBM,
                 element_type=DType.I32, commands=op.index_commands, input_type=spm_as_hbm(index_t) if spm else index_t,
                 output_type=scratch_t, loc=op.loc)
    return run_dma(read, mem, env)


def run_gather(op: Any, mem: Memory, env: dict[int, Any], types: dict[int, Any]) -> Any:
    """Execute one GatherOp; return the DM tensor it creates."""
    table_t, out_t = op.input_type, op.output_type
    index_t = types.get(op.index.id)
    check(index_t is not None, f"the index {op.index} has no type", op)
    shape = gather_shape(table_t, index_t, out_t)
    check(not hasattr(shape, "code"), "the record's types describe no gather", op)
    table = env.get(op.src.id)
    check(isinstance(table, np.ndarray), f"the table {op.src} is not an HBM tensor", op)
    chips, blocks = table_t.chip.size, op.outer or 1
    table_bytes = blocks * shape.rows * op.row_bytes
    check(table.size == chips * table_bytes and (op.rows, op.gathered, blocks) ==
          (shape.rows, shape.index_count, shape.outer_count),
          "rows, gathered, outer and row_bytes disagree with the table and index types", op)
    raw = _index_bytes(op, mem, env, index_t, index_scratch(index_t))
    count = op.gathered
    check(raw.size >= chips * count * 4, "the index holds fewer values than the record gathers", op)
    live = ~pad_mask(table_t.chip)
    if op.count is not None:
        check(op.count.id in env, f"the count {op.count} has no value", op)
    kept = prefix_length(op.prefix, env[op.count.id] if op.count is not None else None, count)
    rows = np.zeros((chips, blocks, count, op.row_bytes), np.uint8)
    for c in range(chips):
        if not live[c]:
            continue
        values = from_bytes(raw[c * count * 4:(c + 1) * count * 4], DType.I32, 32).astype(np.int64)
        fault = index_fault(values, op.mode.name == "SCALED", op.row_bytes, op.rows, shape.key, shape.index, c)
        if fault is not None:
            raise fault
        picked = values // op.row_bytes if op.mode.name == "SCALED" else values
        chip_rows = table[c * table_bytes:(c + 1) * table_bytes].reshape(blocks, op.rows, op.row_bytes)
        rows[c] = chip_rows[:, picked]   # each value's row from every block of the table
        if kept is not None:   # `sparse_prefix`: the entries past it are not gathered
            rows[c, :, kept:] = 0
    virtual = virtual_source(table_t, shape)
    source = Ref(-1 - op.result.id)
    env[source.id] = rows.reshape(-1)
    try:
        move = DmaOp(result=op.result, src=source, kind=DmaKind.HBM_TO_DM, element_type=op.element_type,
                     commands=op.commands, input_type=virtual, output_type=out_t, loc=op.loc)
        return run_dma(move, mem, env)
    finally:
        env.pop(source.id, None)


def run_scatter(op: Any, mem: Memory, env: dict[int, Any], types: dict[int, Any]) -> np.ndarray:
    """Execute one ScatterOp; return the HBM bytes of the new tensor it writes (its data read
    out of the tile it names, when it names one: the commands already start there; into the
    page it names, when it names one: the rows count from the page's first byte)."""
    data_t, out_t = op.view_types()
    index_t = types.get(op.index.id)
    check(index_t is not None and index_t.kind in ("hbm", "spm"), f"the index {op.index} is not an HBM or SPM tensor",
          op)
    key = index_t.element if index_t.kind == "hbm" else pair_all([Symbol(a, n) for a, n in positions_axes(index_t)])
    shape = scatter_shape(data_t, key, index_t, out_t)
    check(not hasattr(shape, "code"), "the record's types describe no scatter", op)
    blocks = op.outer or 1
    check((op.rows, op.scattered, blocks) == (shape.rows, shape.count, shape.outer_count),
          "rows, scattered and outer disagree with the types", op)
    rows_t = virtual_rows(data_t, shape)
    read = DmaOp(result=Ref(-1 - op.result.id), src=op.src, kind=DmaKind.DM_TO_HBM, element_type=op.element_type,
                 commands=op.commands, input_type=data_t, output_type=rows_t, loc=op.loc)
    if op.src_start is not None:   # a tile at a runtime start: the read moves by it (RUNTIME-10 past its limit)
        read = DmaWindowOp(**{f.name: getattr(read, f.name) for f in attrs.fields(DmaOp) if f.init},
                           src_view=data_t.levels(), src_offset=0, src_start=op.src_start,
                           src_start_bytes=op.src_start_bytes, src_start_limit=op.src_start_limit)
    rows = run_dma(read, mem, env)
    raw = env.get(op.index.id)
    check(isinstance(raw, np.ndarray), f"the index {op.index} has no HBM bytes", op)
    scaled = not op.index_commands
    if not scaled:   # positions in SPM: read into the key's order first
        scratch = HbmType(DType.I32, index_t.chip, pair_all([Symbol(a, n) for a, n in shape.key]))
        raw = run_dma(DmaOp(result=Ref(op.result.id), src=op.index, kind=DmaKind.HBM_TO_HBM, element_type=DType.I32,
                            commands=op.index_commands, input_type=spm_as_hbm(index_t), output_type=scratch,
                            loc=op.loc), mem, env)
    chips, count, width = out_t.chip.size, op.scattered, op.row_bytes
    block, src_block = op.rows * width, count * width
    chip_bytes, page = blocks * block, 0
    if op.dst_view is not None:   # into one page of each chip's copy, moved by its runtime start
        chip_bytes, page = tensor_bytes(op.output_type, mem.target), op.dst_offset + start_bytes(op, env, "dst")
    out = np.zeros(chips * chip_bytes, np.uint8)
    if op.into is not None:  # into an existing tensor: the rows no index names keep its bytes
        old = env.get(op.into.id)
        check(isinstance(old, np.ndarray) and old.size == out.size, f"{op.into} is not an HBM tensor of the output's bytes", op)
        out = old.copy()
    live = ~pad_mask(out_t.chip)
    for c in range(chips):
        if not live[c]:
            continue
        values = from_bytes(raw[c * count * 4:(c + 1) * count * 4], DType.I32, 32).astype(np.int64)
        fault = index_fault(values, scaled, width, op.rows, shape.axis, shape.key, c, "scatter")
        if fault is not None:
            raise fault
        for b in range(blocks):   # each block of the output takes its own row of every entry
            base, src = c * chip_bytes + page + b * block, (c * blocks + b) * src_block
            for k, offset in enumerate((values if scaled else values * width).tolist()):   # the last write wins
                out[base + offset:base + offset + width] = rows[src + k * width:src + (k + 1) * width]
    return out


def run_shuffle(op: Any, mem: Memory, env: dict[int, Any]) -> Any:
    """Execute one ShuffleOp: an HBM one is a `dma` whose sources already name the shuffled
    chips; a DM one copies each command from the DM of its shuffled source part, as a
    redistribution does (`run_redistribute`)."""
    return run_dma(op, mem, env) if op.output_type.kind == "hbm" else run_redistribute(op, mem, env)


@per_record
def _walks(op: Any) -> list[tuple[tuple[int, int], list[int], list[int], list[int]]]:
    """Per command: its source (chip, cluster), and the loop sizes, source strides and
    destination strides of its walk when its innermost entry is a packet read and written
    in order (the strided shortcut's input); empty loops for one that is not."""
    out = []
    for i, cmd in enumerate(op.commands):
        packed = bool(cmd.entries) and (cmd.entries[-1].src_stride, cmd.entries[-1].dst_stride) == (1, 1)
        entries = cmd.entries if packed else ()
        out.append((tuple(op.command_source(i, cmd)), [e.size for e in entries], [e.src_stride for e in entries],
                    [e.dst_stride for e in entries]))
    return out


def run_redistribute(op: Any, mem: Memory, env: dict[int, Any]) -> DmTensor:
    """Execute one RedistributeOp, DmaRelayoutOp or DM ShuffleOp; return the DM tensor it creates (zero where no
    command writes). A tile read or written at a runtime start moves that side's addresses."""
    check(isinstance(env.get(op.src.id), DmTensor), f"source {op.src} is not a DM tensor", op)
    t = op.output_type
    base = mem.dm_address[op.result.id]
    if getattr(op, "into", None) is None:    # a write into a view keeps the tensor's other bytes
        mem.zero_dm(live_parts(t), t.slice.size, base, tensor_bytes(t, mem.target), op)
    fast = shortcuts.on()
    moved = start_bytes(op, env, "src"), start_bytes(op, env, "dst")   # tiles at runtime starts (RUNTIME-10)
    for i, (cmd, (source, sizes_, src_strides, dst_strides)) in enumerate(zip(op.commands, _walks(op))):
        src, dst = mem.dm(*source), mem.dm(cmd.part.chip, cmd.part.cluster)
        src_base, dst_base = cmd.src_base + moved[0], cmd.dst_base + moved[1]
        if fast and sizes_ and copy_strided(src, src_base, src_strides, dst, dst_base, dst_strides, sizes_):
            continue   # an in-bounds affine walk writing each byte once: copied through views (a shortcut)
        copy_walk(src, src_base, dst, dst_base, cmd.entries[:-1], cmd.entries[-1].size if cmd.entries else 1, op, i)
    return DmTensor(base, t)
