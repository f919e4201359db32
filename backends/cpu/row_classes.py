"""Which spatial rows of a DMA's result hold the same data, known from the move itself.

A DMA that broadcasts (a DM tensor holding the same rows of an HBM tensor in several
slices) reads those rows with a zero stride along some slice digits: its strided form
(backends/cpu/moves_strided.py) says so. `record` keeps, for the result buffer, one class
per spatial row: rows of one class read the same input bytes cell for cell (or are all
padding, hence zero), so they hold equal values. The contraction's row split
(backends/cpu/contract_fast.py) then compares classes instead of data. A class is only
ever recorded for a buffer the executor owns and never modifies in place, and it is
looked up by the identity of the buffer's memory (a weak reference guards against reuse).

A DMA whose rows are such copies may also be held as its distinct rows (`dma_copies`).
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

from backends.cpu import arena
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.moves_strided import StridedForm, source_view
from backends.cpu.distinct import distinct_values
from backends.cpu.wide_copy import wide_runs

__all__ = ["record", "remember", "classes_of", "forget", "dma_copies", "identity", "MIN_COPIES"]

_KNOWN = arena.ROW_CLASSES


def _digits(form: StridedForm, n_cells: int) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]] | None:
    """The digits of `form` writing an (rows, n_cells) result: those stepping whole rows
    (extent, row step, input stride) and those inside a row (extent, cell step, input
    stride), a digit running over whole rows and their cells at once cut into one of each;
    None when a digit crosses rows partly or a row's cells run past it."""
    row_digits, cell_digits = [], []
    span = form.p0 % n_cells
    for n, p, v in zip(form.extents, form.pstrides, form.vstrides):
        if n == 1:
            continue
        if p % n_cells == 0:
            row_digits.append((n, p // n_cells, v))
        elif (n - 1) * p < n_cells:
            cell_digits.append((n, p, v))
            span += (n - 1) * p
        elif n_cells % p == 0 and (n * p) % n_cells == 0:  # rows and cells merged in one digit
            inner = n_cells // p
            row_digits.append((n // inner, 1, v * inner))
            cell_digits.append((inner, p, v))
            span += (inner - 1) * p
        else:
            return None
    return (row_digits, cell_digits) if span < n_cells else None


@functools.lru_cache(maxsize=128)
def written(form: StridedForm, n_rows: int, n_cells: int) -> tuple[np.ndarray, np.ndarray, list, list, list] | None:
    """(rows, keys, row digits, their key radices, cell digits) of a form writing an
    (n_rows, n_cells) result (`_digits`): every row it writes, and a key per row, equal
    for rows reading the same input bytes cell for cell (the digits of nonzero input stride,
    the last fastest; a radix of 0 for the others). None when a digit crosses rows partly,
    a row's cells run past it, or two digits write one row."""
    found = _digits(form, n_cells)
    if found is None:
        return None
    row_digits, cell_digits = found
    radices = [0] * len(row_digits)
    radix = 1
    for k in reversed(range(len(row_digits))):
        if row_digits[k][2] != 0:
            radices[k] = radix
            radix *= row_digits[k][0]
    rows = np.full(1, form.p0 // n_cells, np.int64)
    keys = np.zeros(1, np.int64)
    for (n, step, _), r in zip(row_digits, radices):
        d = np.arange(n, dtype=np.int64)
        rows = np.add.outer(rows, d * step).reshape(-1)
        keys = np.add.outer(keys, d * r).reshape(-1)
    if rows.max() >= n_rows or distinct_values(rows).size != rows.size:
        return None
    return rows, keys, row_digits, radices, cell_digits


@functools.lru_cache(maxsize=128)
def _classes(form: StridedForm, n_rows: int, n_cells: int) -> np.ndarray | None:
    """One class per row of an (n_rows, n_cells) result written by `form`; -1 for rows
    it writes no cell of. None when `written` finds no rows."""
    found = written(form, n_rows, n_cells)
    if found is None:
        return None
    classes = np.full(n_rows, -1, np.int64)
    classes[found[0]] = found[1]
    return classes


def record(out: np.ndarray, form: StridedForm, n_rows: int) -> None:
    """Remember the row classes of `out`, a fresh result of (n_rows, cells) written by `form`."""
    root = out if out.base is None else arena.owned_root(out)
    if root is None or n_rows == 0 or out.size % n_rows:
        return
    classes = _classes(form, n_rows, out.size // n_rows)
    if classes is None:
        return
    _KNOWN.put(root, classes)


def remember(rows: np.ndarray, classes: np.ndarray) -> None:
    """Remember `classes` (one per row) for `rows` (rows, n), a fresh array that nothing
    writes again (a DMA's copies copied out: backends/cpu/row_classes.py `dma_copies`), when its rows
    are all its memory."""
    root = rows
    while isinstance(root.base, np.ndarray):
        root = root.base
    if rows.ndim == 2 and rows.flags.c_contiguous and root.nbytes == rows.nbytes and len(classes) == rows.shape[0]:
        _KNOWN.put(root, np.asarray(classes, np.int64))


def forget(root: np.ndarray) -> None:
    """Drop the classes recorded for `root`, whose memory is about to be written again
    (an arena buffer: backends/cpu/arena.py)."""
    _KNOWN.drop(root)


def classes_of(rows: np.ndarray) -> np.ndarray | None:
    """The recorded class of every row of `rows` (rows, n), a view of a recorded buffer
    whose rows start at that buffer's rows; None when it is not one."""
    root = rows
    while isinstance(root.base, np.ndarray):
        root = root.base
    classes = _KNOWN.get(root)
    if classes is None or rows.ndim != 2:
        return None
    row_bytes = root.nbytes // classes.size
    start = rows.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if row_bytes == 0 or start % row_bytes or rows.strides[0] % row_bytes or rows.strides[0] <= 0 \
            or rows.shape[1] * rows.itemsize > row_bytes or (rows.shape[1] > 1 and rows.strides[1] != rows.itemsize):
        return None
    index = start // row_bytes + np.arange(rows.shape[0]) * (rows.strides[0] // row_bytes)
    if index.size and index[-1] >= classes.size:
        return None
    return classes[index]


MIN_COPIES = 2
"""Written rows per distinct row from which a DMA's result is held as its distinct rows."""


@functools.lru_cache(maxsize=128)
def _plan(form: StridedForm, n_rows: int, n_cells: int) -> tuple[StridedForm, np.ndarray, int, bool, bool] | None:
    """(form writing the distinct rows into a (distinct, n_cells) buffer, row_of, distinct,
    whether some row is written by no cell, whether the form writes every cell of the
    distinct rows once: `_covers`)
    for a DMA whose `form` writes an (n_rows, n_cells) result; None when some digit of the
    form crosses rows partly, two digits write one row, or the rows are not copies."""
    found = written(form, n_rows, n_cells)
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
    return out_form, row_of, distinct, bool((row_of == distinct).any()), _covers(out_form, distinct * n_cells)


def _covers(form: StridedForm, size: int) -> bool:
    """Whether `form`'s grid writes each of the first `size` cells once (its digits, by
    stride, one mixed radix from cell 0 up to `size`)."""
    span = 1
    for stride, n in sorted((p, n) for n, p in zip(form.extents, form.pstrides) if n > 1):
        if stride != span:
            return False
        span *= n
    return form.p0 == 0 and span == size


@functools.lru_cache(maxsize=64)
def identity(n_cells: int, item: int) -> StridedForm:
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
    out_form, row_of, distinct, padding, covers = found
    if covers:  # every cell of the distinct rows written: only the zero row zeroed (issue 61: a tile's
        out = np.empty((distinct + padding) * n_cells, rows.dtype)  # DMA zeroed 128 KiB-1 MiB a run)
        out[distinct * n_cells:] = 0
    else:
        out = np.zeros((distinct + padding) * n_cells, rows.dtype)  # a fresh copy, zero where nothing is written
    item = out.itemsize
    dst = as_strided(out[out_form.p0:], out_form.extents, tuple(p * item for p in out_form.pstrides))
    np.copyto(*wide_runs(dst, source_view(rows, out_form, 0, 1, 1)[0]))  # runs of cells as words
    return LazyRows(out.reshape(distinct + padding, n_cells), identity(n_cells, item), n_cells, shape, row_of)
