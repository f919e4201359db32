"""A DMA that writes copies of the same rows into many slices, held as the distinct rows.

A DM tensor often holds one tile of an HBM tensor in several slices (gemm_tiled's `a` is
split over `M % 512 / 32` and repeated along `N % 512 / 32`): the DMA's strided form
(backends/cpu/moves_strided.py) reads the same input bytes for every value of some slice
digits (a zero input stride). Writing every copy costs a pass over the whole DM buffer;
`dma_copies` instead copies each distinct row once, into a fresh array, and gives a
`LazyRows` (backends/cpu/lazy_rows.py) whose `row_of` names the distinct row each spatial
row holds (a padding row, written by no cell, reads an extra row of zeros). The moves
after it keep the map, the contraction folds its matmul on the distinct rows
(backends/cpu/contract_int.py), and every other consumer gets the full buffer
(`lazy_rows.materialize`), bit for bit the eager DMA's result.

The distinct rows are a copy, never a view of the DMA's input: a later write into that
input (an in-out parameter written by a tile of the same kernel) leaves them as they were.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu import row_classes
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.moves_strided import StridedForm, source_view

__all__ = ["dma_copies", "MIN_COPIES"]

MIN_COPIES = 2
"""Written rows per distinct row from which a DMA's result is held as its distinct rows."""


@functools.lru_cache(maxsize=128)
def _plan(form: StridedForm, n_rows: int, n_cells: int) -> tuple[StridedForm, np.ndarray, int, bool] | None:
    """(form writing the distinct rows into a (distinct, n_cells) buffer, row_of, distinct,
    whether some row is written by no cell)
    for a DMA whose `form` writes an (n_rows, n_cells) result; None when some digit of the
    form crosses rows partly, two digits write one row, or the rows are not copies."""
    found = row_classes.written(form, n_rows, n_cells)
    if found is None:
        return None
    rows, keys, row_digits, radices, cell_digits = found
    distinct = math.prod(n for n, _, v in row_digits if v != 0)
    if distinct * MIN_COPIES > rows.size:
        return None
    row_of = np.full(n_rows, distinct, np.intp)  # rows written by no cell: the zero row
    row_of[rows] = keys
    digits = [(n, r * n_cells, v) for (n, _, v), r in zip(row_digits, radices) if v != 0] + cell_digits
    out_form = StridedForm(tuple(n for n, _, _ in digits), tuple(p for _, p, _ in digits),
                           tuple(v for _, _, v in digits), form.p0 % n_cells, form.v0, False)
    row_of.setflags(write=False)
    return out_form, row_of, distinct, bool((row_of == distinct).any())


@functools.lru_cache(maxsize=64)
def _identity(n_cells: int, item: int) -> StridedForm:
    """The form reading every cell of a row in order."""
    return StridedForm((n_cells,), (1,), (item,), 0, 0, True)


def dma_copies(rows: np.ndarray, form: StridedForm, n_rows: int, shape: tuple[int, ...]) -> LazyRows | None:
    """The DMA of `rows` (1, *input shape) by `form` into a buffer of `shape` and `n_rows`
    spatial rows, as its distinct rows and the map (a `LazyRows`), when its rows are copies
    of at least `MIN_COPIES` times fewer distinct ones; None otherwise."""
    total = math.prod(shape)
    if n_rows <= 1 or total % n_rows:
        return None
    n_cells = total // n_rows
    found = _plan(form, n_rows, n_cells)
    if found is None:
        return None
    out_form, row_of, distinct, padding = found
    out = np.zeros((distinct + padding) * n_cells, rows.dtype)  # a fresh copy, zero where nothing is written
    item = out.itemsize
    dst = as_strided(out[out_form.p0:], out_form.extents, tuple(p * item for p in out_form.pstrides))
    np.copyto(dst, source_view(rows, out_form, 0, 1, 1)[0])
    return LazyRows(out.reshape(distinct + padding, n_cells), _identity(n_cells, item), n_cells, shape, row_of)
