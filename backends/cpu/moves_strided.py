"""Strided fast path of the logical-index move (backends/cpu/moves.py).

A move plan maps every live output position to one input position (`MovePlan.index`).
When that map is affine in a grid of digits -- output position `P0 + sum d_j * p_j`
reads the input element at byte offset `V0 + sum d_j * v_j` of the input buffer -- the
move is a strided copy (or, when the output is the input re-viewed, no copy at all):
pure reshapes, transposes, broadcasts (`v_j = 0`) and regroupings. The digit grid is
found numerically from the plan's logical indices (and the input buffer's strides, so an
input that is itself a strided view composes without a copy) and checked exactly against
every live cell; a plan that is not affine keeps the gather of moves.py. Padding output
cells stay zero. No read plan of the sequencer is involved.
"""

from __future__ import annotations

from collections import OrderedDict
import math

import attrs

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu import arena

__all__ = ["StridedForm", "strided_form", "as_view", "apply_form", "even_rows", "FORMS"]


@attrs.frozen
class StridedForm:
    """Live output cells as a digit grid (outer to inner): `extents`, output element
    strides `pstrides` from output flat position `p0`, input byte strides `vstrides` from
    input flat position `v0`. `full` when the output
    has no padding cell (the grid covers every output position in C order)."""

    extents: tuple[int, ...]
    pstrides: tuple[int, ...]
    vstrides: tuple[int, ...]
    p0: int
    v0: int
    full: bool


def _offsets(shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """Byte offset of every element of an array (C order of `shape`), from element 0."""
    offs = np.zeros(1, np.int64)
    for n, s in zip(shape, strides):
        offs = np.add.outer(offs, np.arange(n, dtype=np.int64) * s).reshape(-1)
    return offs


def _largest_divisor_upto(m: int, limit: int) -> int:
    for e in range(min(limit, m), 0, -1):
        if m % e == 0:
            return e
    return 1


def _linear_run(cols: tuple[np.ndarray, ...], steps: tuple[int, ...], m: int) -> int:
    """Largest r <= m with cols[c][k] == cols[c][0] + k * steps[c] for every k < r and c
    (`cols` are the strided samples, length m), by doubling then bisection."""

    def ok(lo: int, hi: int) -> bool:
        k = np.arange(lo, hi, dtype=np.int64)
        return all(np.array_equal(c[lo:hi], c[0] + k * s) for c, s in zip(cols, steps))

    good = min(2, m)  # k = 0, 1 hold by definition of the step
    while good < m:
        nxt = min(2 * good, m)
        if not ok(good, nxt):
            lo, hi = good, nxt  # fails somewhere in [lo, hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if ok(lo, mid):
                    lo = mid
                else:
                    hi = mid
            return lo if not ok(lo, lo + 1) else hi
        good = nxt
    return good


_CHECK_BLOCK = 1 << 20


def _dims(cols: tuple[np.ndarray, ...]) -> list[tuple[int, tuple[int, ...]]] | None:
    """(extent, step of each column) of each grid digit, inner to outer, with every
    `cols[c]` = cols[c][0] + sum d_j * step_j[c]; None when no such grid exists."""
    n = len(cols[0])
    dims: list[tuple[int, tuple[int, ...]]] = []
    block = 1
    while block < n:
        subs = tuple(c[::block] for c in cols)
        m = len(subs[0])
        steps = tuple(int(c[1]) - int(c[0]) for c in subs)
        e = _largest_divisor_upto(m, _linear_run(subs, steps, m))
        if e <= 1:
            return None
        dims.append((e, steps))
        block *= e
    for lo in range(0, n, _CHECK_BLOCK):  # exact check of every cell, a block at a time (no whole-size scratch)
        hi = min(n, lo + _CHECK_BLOCK)
        for i, c in enumerate(cols):
            k = np.arange(lo, hi, dtype=np.int64)
            expect = np.full(hi - lo, int(c[0]), np.int64)
            for e, steps in dims:  # inner to outer: k's mixed-radix digits
                expect += (k % e) * steps[i]
                k //= e
            if not np.array_equal(expect, c[lo:hi]):
                return None
    return dims


def strided_form(index: np.ndarray, live: np.ndarray | None, src_shape: tuple[int, ...],
                 src_strides: tuple[int, ...]) -> StridedForm | None:
    """The affine form of a move plan read from an input of `src_shape` (C-order flat
    positions as in `index`) laid out with byte `src_strides`; None when not affine."""
    if live is None:  # positions in the narrowest dtype that holds them: a DMA's plan is the tensor's size
        pos = np.arange(len(index), dtype=np.int32 if len(index) <= np.iinfo(np.int32).max else np.int64)
        src = index
    else:
        pos = np.flatnonzero(live)
        src = index[pos]
    if len(pos) == 0:
        return None
    offs = _offsets(src_shape, src_strides)
    dims = _dims((pos, offs[src]))
    if dims is None:
        return None
    dims = dims[::-1]  # outer to inner
    extents = tuple(e for e, _ in dims)
    pstrides = tuple(int(s[0]) for _, s in dims)
    vstrides = tuple(int(s[1]) for _, s in dims)
    full = live is None and int(pos[0]) == 0
    return StridedForm(extents, pstrides, vstrides, int(pos[0]), int(src[0]), full)


def _start_view(rows: np.ndarray, flat: int) -> np.ndarray:
    """A view of `rows` (n_rows, *local) whose first element is local flat position `flat`
    of row 0."""
    idx = np.unravel_index(flat, rows.shape[1:]) if rows.ndim > 1 else ()
    return rows[(slice(None), *(slice(int(i), None) for i in idx))]


def source_view(rows: np.ndarray, form: StridedForm, r0: int, step: int, count: int) -> np.ndarray:
    """The input cells of the live grid, (count, *extents), as a read-only strided view."""
    start = _start_view(rows[r0:], form.v0)
    return as_strided(start, (count, *form.extents), (rows.strides[0] * step, *form.vstrides),
                      writeable=False)


def as_view(rows: np.ndarray, form: StridedForm, n_dst: int) -> np.ndarray | None:
    """The moved rows (n_rows, n_dst) as a read-only view of `rows` when the form covers
    every output cell and its grid reshapes to them without a copy; None otherwise."""
    if not form.full:
        return None
    view = source_view(rows, form, 0, 1, rows.shape[0])
    try:
        return np.reshape(view, (rows.shape[0], n_dst), copy=False)
    except ValueError:
        return None


def apply_form(rows: np.ndarray, form: StridedForm, n_dst: int,
               live_rows: tuple[int, int, int] | None) -> np.ndarray:
    """The moved rows, (n_rows, n_dst): `rows` (n_rows, *src_local) is the input with
    padding rows holding zero; `live_rows` (first, step, count) the live rows evenly
    spaced, or None when they are not (then every row is moved). A view of the input when
    the output is a reshape of the grid, otherwise a new array."""
    n_rows = rows.shape[0]
    view = as_view(rows, form, n_dst)
    if view is not None:
        return view
    r0, step, count = live_rows if live_rows is not None else (0, 1, n_rows)
    padded = not form.full or count != n_rows
    run = _dense_run(form, n_dst) if padded and count == n_rows else None
    whole = form.full and count != n_rows  # live rows written whole: zero only the others
    sparse = count * 4 <= n_rows  # mostly padding rows: fresh zero pages, only the live rows written
    if sparse and padded:
        out = arena.zeros((n_rows, n_dst), rows.dtype, sparse=True)
        run, whole = None, False
        rows_live = rows[r0:r0 + step * (count - 1) + 1:step]
        out[r0:r0 + step * (count - 1) + 1:step] = apply_form(rows_live, form, n_dst, None)
        return out
    if padded and math.prod(form.extents) * 4 <= n_dst:  # a row mostly padding: fresh zero pages
        out = arena.zeros((n_rows, n_dst), rows.dtype, sparse=True)
        run, whole = None, False
    else:
        out = (arena.zeros if padded and run is None and not whole else arena.empty)((n_rows, n_dst), rows.dtype)
    if run is not None:  # one run of cells per row: zero only the cells around it
        out[:, :run[0]] = 0
        out[:, run[1]:] = 0
    if whole:
        out[:r0] = 0
        out[r0 + step * (count - 1) + 1:] = 0
        for k in range(1, step):  # the rows between two live ones
            out[r0 + k:r0 + step * (count - 1):step] = 0
    item = out.itemsize
    start = out[r0:, form.p0:]
    dst = as_strided(start, (count, *form.extents),
                     (out.strides[0] * step, *(p * item for p in form.pstrides)))
    np.copyto(dst, source_view(rows, form, r0, step, count))
    return out


def _dense_run(form: StridedForm, n_dst: int) -> tuple[int, int] | None:
    """(start, stop): the cells of a row `form` writes when they are one run of
    consecutive cells of every row; None otherwise."""
    total, inner = 1, 1
    for n, p in reversed([(n, p) for n, p in zip(form.extents, form.pstrides) if n > 1]):
        if p != inner:
            return None
        inner *= n
        total *= n
    stop = form.p0 + total
    return (form.p0, stop) if stop <= n_dst else None


class FormCache:
    """Strided forms (or None: not affine) by (levels, input shape and strides)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.forms: OrderedDict[tuple, StridedForm | None] = OrderedDict()

    def get(self, key: tuple) -> tuple[bool, StridedForm | None]:
        if key in self.forms:
            self.forms.move_to_end(key)
            return True, self.forms[key]
        return False, None

    def put(self, key: tuple, form: StridedForm | None) -> None:
        self.forms[key] = form
        while len(self.forms) > self.size:
            self.forms.popitem(last=False)


FORMS = FormCache(512)


def even_rows(live: np.ndarray, n_rows: int) -> tuple[int, int, int] | None:
    """(first, step, count) when the live rows are evenly spaced; None otherwise."""
    count = len(live)
    if count == n_rows:
        return 0, 1, n_rows
    if count == 0:
        return None
    if count == 1:
        return int(live[0]), 1, 1
    step = int(live[1] - live[0])
    if step > 0 and np.array_equal(live, live[0] + step * np.arange(count)):
        return int(live[0]), step, count
    return None
