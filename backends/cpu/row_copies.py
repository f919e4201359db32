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

from backends.cpu.lazy_rows import LazyRows
from backends.cpu.moves_strided import StridedForm, source_view

__all__ = ["dma_copies", "MIN_COPIES"]

MIN_COPIES = 2
"""Written rows per distinct row from which a DMA's result is held as its distinct rows."""


def _whole_rows(form: StridedForm, n_cells: int) -> list[tuple[int, int, int]]:
    """The form's digits (extent, output stride, input stride), a digit running over whole
    rows and their cells at once (output stride p dividing the row, n * p whole rows) cut
    into a digit of rows and one of cells."""
    out = []
    for n, p, v in zip(form.extents, form.pstrides, form.vstrides):
        inner = n_cells // p if 0 < p < n_cells and n_cells % p == 0 else 0
        if inner > 1 and n % inner == 0 and n > inner:
            out += [(n // inner, p * inner, v * inner), (inner, p, v)]
        else:
            out.append((n, p, v))
    return out


@functools.lru_cache(maxsize=128)
def _plan(form: StridedForm, n_rows: int, n_cells: int) -> tuple[StridedForm, np.ndarray, int, bool] | None:
    """(form writing the distinct rows into a (distinct, n_cells) buffer, row_of, distinct,
    whether some row is written by no cell)
    for a DMA whose `form` writes an (n_rows, n_cells) result; None when some digit of the
    form crosses rows partly, two digits write one row, or the rows are not copies."""
    p_row, p_cell = divmod(form.p0, n_cells)
    row_digits, cell_digits = [], []
    span = p_cell
    for n, p, v in _whole_rows(form, n_cells):
        if n == 1:
            continue
        if p % n_cells == 0:
            row_digits.append((n, p // n_cells, v))
        elif (n - 1) * p < n_cells:
            cell_digits.append((n, p, v))
            span += (n - 1) * p
        else:
            return None
    if span >= n_cells:
        return None
    varying = [(n, v) for n, _, v in row_digits if v != 0]
    distinct = math.prod(n for n, _ in varying)
    written = math.prod(n for n, _, _ in row_digits)
    if distinct * MIN_COPIES > written:
        return None
    radix, keys_of = 1, {}
    for k in reversed(range(len(row_digits))):  # the last varying digit fastest
        if row_digits[k][2] != 0:
            keys_of[k] = radix
            radix *= row_digits[k][0]
    rows = np.full(1, p_row, np.int64)
    keys = np.zeros(1, np.int64)
    for k, (n, step, _) in enumerate(row_digits):
        d = np.arange(n, dtype=np.int64)
        rows = np.add.outer(rows, d * step).reshape(-1)
        keys = np.add.outer(keys, d * keys_of.get(k, 0)).reshape(-1)
    if rows.max() >= n_rows or np.unique(rows).size != rows.size:
        return None
    row_of = np.full(n_rows, distinct, np.intp)  # rows written by no cell: the zero row
    row_of[rows] = keys
    digits = [(n, keys_of[k] * n_cells, v) for k, (n, _, v) in enumerate(row_digits) if v != 0] + cell_digits
    out_form = StridedForm(tuple(n for n, _, _ in digits), tuple(p for _, p, _ in digits),
                           tuple(v for _, _, v in digits), p_cell, form.v0, False)
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
