"""Which spatial rows of a DMA's result hold the same data, known from the move itself.

A DMA that broadcasts (a DM tensor holding the same rows of an HBM tensor in several
slices) reads those rows with a zero stride along some slice digits: its strided form
(backends/cpu/moves_strided.py) says so. `record` keeps, for the result buffer, one class
per spatial row: rows of one class read the same input bytes cell for cell (or are all
padding, hence zero), so they hold equal values. The contraction's row split
(backends/cpu/contract_fast.py) then compares classes instead of data. A class is only
ever recorded for a buffer the executor owns and never modifies in place, and it is
looked up by the identity of the buffer's memory (a weak reference guards against reuse).
"""

from __future__ import annotations

import functools

import numpy as np

from backends.cpu import arena
from backends.cpu.moves_strided import StridedForm

__all__ = ["record", "remember", "classes_of", "forget"]

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
    if rows.max() >= n_rows or np.unique(rows).size != rows.size:
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
    writes again (a DMA's copies copied out: backends/cpu/row_copies.py), when its rows
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
