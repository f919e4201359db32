"""A Switch Engine broadcast held as its distinct rows (issue 61 item 2: bf16 by BLAS).

A broadcasting switch (BROADCAST1, BROADCAST01, a custom broadcast) writes the same cells
into several slices: `w by switch` placements hand every slice of a column the same
TRF rows. Written out, the result is many times its distinct data, and the contraction
reading it widened and multiplied every copy (256 TRF rows where 16 differ, on a drawn
GEMM). Which output cell reads which input cell does not depend on the data, so it is
found once per switch (`_plan`: the engine's own `ir.switch.semantics.switch_data` run
on the cells' positions, padding zeroed as in every buffer), and the rows of equal
positions are copies. `distinct` then gathers each distinct row once and returns a
`LazyRows` whose `row_of` names, per spatial row, the distinct row it holds: the moves
after it keep the map, the contraction groups its products by it (as a DMA's copies:
backends/cpu/row_classes.py), every other consumer gets the full buffer, bit for bit
the eager switch's result.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ir.data_movement_ops import Switch
from ir.switch.semantics import switch_data

from backends.cpu import layout
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.row_classes import MIN_COPIES, identity

__all__ = ["distinct"]


@functools.lru_cache(maxsize=64)
def _plan(in_t, out_t, out_slice, out_time, config) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """(the input cell each distinct output row's cells read, (distinct, cells), plus one
    with 0 for a padding cell when some cell is padding; the distinct row each spatial
    output row holds; whether some cell is padding), or None when the rows are not copies of at least `MIN_COPIES` times fewer
    distinct rows."""
    total = math.prod(layout.shape_of(in_t))
    positions = np.arange(1, total + 1, dtype=np.int64 if total >= 1 << 31 else np.int32)
    rings = positions.reshape(-1, in_t.slice.size, in_t.time.size, in_t.packet.size)
    moved = np.stack([switch_data(ring, in_t.slice, in_t.time, out_slice, out_time, config) for ring in rings])
    moved = layout.zero_padding_in_place(moved.reshape(layout.shape_of(out_t)), out_t)
    rows = moved.reshape(layout.n_rows(out_t), -1)
    kept, first, row_of = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    if len(kept) * MIN_COPIES > rows.shape[0]:
        return None
    order = np.argsort(first)  # the distinct rows in the order they first appear
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    row_of = rank[row_of.reshape(-1)].astype(np.intp)
    row_of.setflags(write=False)
    index = np.ascontiguousarray(kept[order])
    padding = bool((index == 0).any())
    return (index if padding else index - 1), row_of, padding


def distinct(op: Switch, buf: np.ndarray) -> LazyRows | None:
    """The switch `op` of `buf` as its distinct rows and their map (the module docstring),
    or None when its rows are not copies (then the engine writes the buffer)."""
    t, out_t = op.input.type, op.result.type
    found = _plan(t, out_t, op.out_slice, op.out_time, op.config)
    if found is None:
        return None
    index, row_of, padding = found
    flat = np.ascontiguousarray(buf).reshape(-1)
    if padding:  # position 0 reads a zero cell
        source = np.empty(flat.size + 1, flat.dtype)
        source[0] = 0
        source[1:] = flat
        rows = source[index]
    else:
        rows = flat[index]
    return LazyRows(rows, identity(index.shape[1], rows.itemsize), index.shape[1], layout.shape_of(out_t), row_of)
