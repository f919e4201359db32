"""Gathers and scatters on the cpu backend (docs/machine/dma.md "Gather"): logical rows, then a DMA move.

The table and the index are first moved into plain logical layouts (`[outer, key,
payload]` and the index's axes, `moves.move_global`); every chip's index values are checked (GATHER-6,
the offending index named) and select their rows with numpy; the gathered rows, laid out
as `ir.gather.virtual_source`, then move into the DM output like a `to_dm`.
"""

from __future__ import annotations

import numpy as np

from ir.gather import index_fault, plain_table, virtual_source
from ir.runtime_types import checked_start
from ir.gather_ops import Gather, Scatter, Shuffle
from ir.gather_prefix import prefix_length
from ir.mapping.nodes import Symbol, pair_all
from ir.rules.gather import gather_parts
from ir.rules.scatter import scatter_parts
from ir.spm import spm_as_hbm
from ir.types import HbmType, SpmType

from backends.cpu import moves
from backends.cpu.handlers import handles
from backends.cpu.options import DEFAULT, CpuOptions

__all__ = ["gather", "scatter", "shuffle"]


@handles(Gather, options=True, faults=True)
def gather(op, table: np.ndarray, index: np.ndarray, *count: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """`dma_gather_scaled` / `dma_gather_unscaled` of a trace-valid op (`count`: the runtime
    value of its sparse prefix, when it has one)."""
    shape, _ = gather_parts(op)
    table_t, index_t = op.src.type, op.index.type
    chip = table_t.chip
    fast = options.fast_moves
    blocks = shape.outer_count   # the table axes before the key region: each value takes a row of every block
    plain_t = plain_table(table_t, shape)
    rows = moves.move_global(table, table_t, plain_t, fast=fast).reshape(chip.size, blocks, shape.rows,
                                                                          shape.row_cells)
    idx_t = HbmType(index_t.dtype, chip, pair_all(list(shape.terms)))
    stored_t = spm_as_hbm(index_t) if isinstance(index_t, SpmType) else index_t   # SPM is stored as HBM
    values = moves.move_global(index, stored_t, idx_t, fast=fast).reshape(chip.size, shape.index_count)
    row_bytes = shape.row_bytes(table_t.dtype.bits)
    live = ~moves.logical_pad((chip,))
    picked = np.zeros((chip.size, shape.index_count), np.int64)
    for c in np.flatnonzero(live):
        fault = index_fault(values[c], op.scaled, row_bytes, shape.rows, shape.key, shape.index, int(c))
        if fault is not None:
            raise fault
        v = values[c].astype(np.int64)
        picked[c] = v // row_bytes if op.scaled else v
    gathered = np.stack([rows[c][:, picked[c]] for c in range(chip.size)])   # chip, block, entry, row
    kept = prefix_length(op.prefix, count[0] if count else None, shape.index_count)
    if kept is not None:   # `sparse_prefix`: only each chip's first entries are gathered
        gathered[:, :, kept:] = 0
    gathered = gathered.reshape(chip.size, -1)
    return moves.move_global(gathered, virtual_source(table_t, shape), op.result.type, fast=fast)


@handles(Scatter, options=True, faults=True)
def scatter(op, data: np.ndarray, index: np.ndarray, *into: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """`dma_scatter` of a trace-valid op: a new HBM tensor, zero where no index points (or,
    with `into`, that tensor's cells there). Into one page of `into` (`op.view`): the page's
    cells, one run of its element from `op.offset` (moved by the runtime start), scattered as
    a tensor of the page's type and written back."""
    if op.view is None:
        return _scatter(op, op.result.type, data, index, into, options)
    start = into[1] if len(into) > 1 else None
    first = op.offset if start is None else \
        op.offset + checked_start(start, op.start_limit, "a scatter into a page at a runtime start") * op.start_stride
    out = into[0].copy()
    cells = slice(first, first + op.view.element.size)
    out[:, cells] = _scatter(op, op.view, data, index, (np.ascontiguousarray(into[0][:, cells]),), options)
    return out


def _scatter(op, out_t, data: np.ndarray, index: np.ndarray, into: tuple, options: CpuOptions) -> np.ndarray:
    """The scatter of `op` into a tensor of type `out_t` (`into`: its cells, or none: zeros)."""
    shape, rows_t = scatter_parts(op)
    data_t, index_t = op.src.type, op.index.type
    chip = data_t.chip
    fast = options.fast_moves
    blocks = shape.outer_count
    rows = moves.move_global(data, data_t, rows_t, fast=fast).reshape(chip.size, blocks, shape.count,
                                                                        shape.row_cells)
    idx_t = HbmType(index_t.dtype, chip, pair_all([Symbol(a, n) for a, n in shape.key]))
    scaled = not isinstance(index_t, SpmType)   # an SPM index holds row numbers (`by_positions`)
    stored_t = index_t if scaled else spm_as_hbm(index_t)
    values = moves.move_global(index, stored_t, idx_t, fast=fast).reshape(chip.size, shape.count).astype(np.int64)
    row_bytes = shape.row_cells * data_t.dtype.bits // 8
    plain_t = plain_table(out_t, shape)
    plain_shape = (chip.size, blocks, shape.rows, shape.row_cells)
    plain = (moves.move_global(into[0], out_t, plain_t, fast=fast).reshape(plain_shape).copy()
             if into else np.zeros(plain_shape, rows.dtype))
    for c in np.flatnonzero(~moves.logical_pad((chip,))):
        fault = index_fault(values[c], scaled, row_bytes, shape.rows, shape.axis, shape.key, int(c), "scatter")
        if fault is not None:
            raise fault
        targets = values[c] // row_bytes if scaled else values[c]
        last = len(targets) - 1 - np.unique(targets[::-1], return_index=True)[1]   # the last write wins
        plain[c][:, targets[last]] = rows[c][:, last]
    return moves.move_global(plain.reshape(chip.size, -1), plain_t, out_t, fast=fast)


@handles(Shuffle)
def shuffle(op, src: np.ndarray) -> np.ndarray:
    """A chip or cluster shuffle: position t of the level takes position `pattern[t]`."""
    axis = 0 if op.level == "chip" else 1
    return np.take(src, np.asarray(op.sources, np.int64), axis=axis)
