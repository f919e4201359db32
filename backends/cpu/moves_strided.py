"""Strided fast path of the logical-index move (backends/cpu/moves.py).

A move plan maps every live output position to one input position (`MovePlan.index`).
When that map is affine in a grid of digits (output position `P0 + sum d_j * p_j` reads
input byte offset `V0 + sum d_j * v_j`), the move is a strided copy, or no copy when the
output is the input re-viewed: reshapes, transposes, broadcasts (`v_j = 0`), regroupings.
The grid is found numerically from the plan's logical indices and the input's strides (a
strided input composes without a copy), then checked exactly against every live cell; a
plan that is not affine keeps moves.py's gather. Padding cells stay zero.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import attrs

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu import arena, layout
from backends.cpu.lru import Lru
from backends.cpu.thread_pool import copy_into

__all__ = ["StridedForm", "check_block", "strided_form", "strided_form_cells", "as_view", "apply_form", "even_rows", "FORMS"]


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


_CHECK_BLOCK = 1 << 14  # the most cells a step of the exact checks and scans below looks at
_LEAST_BLOCK = 1 << 11  # the fewest (a smaller plan: all at once)


def check_block(n: int) -> int:
    """Cells a step of the exact checks looks at in a plan of `n` cells: a power of two near
    n / 32 in [`_LEAST_BLOCK`, `_CHECK_BLOCK`] (a step holds a dozen int64 blocks, issue 61)."""
    return min(_CHECK_BLOCK, max(_LEAST_BLOCK, 1 << max(0, (n >> 5).bit_length() - 1)))


def _narrow(extent: int) -> type:
    """The narrowest of int32 / int64 that holds every value below `extent` (halves the
    scratch of a plan under 2^31 elements or bytes)."""
    return np.int32 if extent <= np.iinfo(np.int32).max else np.int64


def _offsets_at(shape: tuple[int, ...], strides: tuple[int, ...], flat: np.ndarray) -> np.ndarray:
    """The byte offsets (int64) of the C-order positions `flat` of an array of `shape` laid
    out with byte `strides`, from element 0, without a table of every element: the
    digits of each asked position times the byte strides (a first run's source is a whole
    DM tensor of every slice, tens of MiB of offsets for the few cells a plan reads)."""
    flat = np.asarray(flat, np.int64)
    if all(s == strides[-1] * math.prod(shape[k + 1:]) for k, s in enumerate(strides)):
        return flat * strides[-1] if strides else np.zeros(flat.shape, np.int64)  # C order: one multiply
    out, rest = np.zeros(flat.shape, np.int64), flat
    for n, s in zip(reversed(shape), reversed(strides)):
        rest, digit = np.divmod(rest, n)
        out += digit * s
    return out


def _live_positions(live: np.ndarray) -> np.ndarray:
    """`np.flatnonzero(live)` in the narrowest dtype, a block at a time (no int64 array of it all)."""
    live = live.reshape(-1)
    dtype = _narrow(len(live))
    block = check_block(len(live))
    parts = [np.flatnonzero(live[lo:lo + block]).astype(dtype) + dtype(lo) for lo in range(0, len(live), block)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _largest_divisor_upto(m: int, limit: int) -> int:
    for e in range(min(limit, m), 0, -1):
        if m % e == 0:
            return e
    return 1


@attrs.frozen
class _Column:
    """One column of the affine check: `values(k)` of the plan's k-th live cells, sampled at
    every `step`-th cell of `n`; read a block at a time, so no column of the plan's whole
    size is ever made."""

    values: Callable[[np.ndarray], np.ndarray]
    n: int
    step: int = 1
    run: Callable[[int, int], np.ndarray] | None = None   # values of cells lo..hi-1 (faster than `values`)

    def __len__(self) -> int:
        return -(-self.n // self.step)

    def take(self, lo: int, hi: int) -> np.ndarray:
        if self.step == 1 and self.run is not None:
            return self.run(lo, hi)
        return self.values(np.arange(lo, hi, dtype=np.int64) * self.step)

    def at(self, k: int) -> int:
        return int(self.take(k, k + 1)[0])

    def every(self, block: int) -> _Column:
        return _Column(self.values, self.n, self.step * block)


def _affine(cols: tuple[_Column, ...], lo: int, hi: int, dims: list[tuple[int, tuple[int, ...]]]) -> bool:
    """Whether samples [lo, hi) of every column are their sample 0 plus the mixed-radix
    digits of the sample number (inner to outer) times the digits' steps (a block of
    `check_block` of the plan's cells at a time)."""
    firsts = [c.at(0) for c in cols]
    block = check_block(cols[0].n)
    inner, width = 0, 1        # the inner digits' sums are one table per column, the others' a few rows
    while inner < len(dims) and width * dims[inner][0] <= block:
        width *= dims[inner][0]
        inner += 1
    tables = []
    for i in range(len(cols)):
        table = np.zeros(1, np.int64)
        for e, steps in reversed(dims[:inner]):
            table = np.add.outer(table, np.arange(e, dtype=np.int64) * steps[i]).reshape(-1)
        tables.append(table)
    for b0 in range(lo, hi, block):
        b1 = min(hi, b0 + block)
        r0, r1 = b0 // width, -(-b1 // width)
        r = np.arange(r0, r1, dtype=np.int64)
        digits = []
        for e, _ in dims[inner:]:
            r, d = np.divmod(r, e)
            digits.append(d)
        cut = slice(b0 - r0 * width, b1 - r0 * width)
        for i, c in enumerate(cols):
            row = np.full(r1 - r0, firsts[i], np.int64)
            for d, (_, steps) in zip(digits, dims[inner:]):
                row += d * steps[i]
            if not np.array_equal(np.add.outer(row, tables[i]).reshape(-1)[cut], c.take(b0, b1)):
                return False
    return True


def _linear_run(cols: tuple[_Column, ...], steps: tuple[int, ...], m: int) -> int:
    """Largest r <= m with cols[c][k] == cols[c][0] + k * steps[c] for every k < r and c
    (`cols` are the strided samples, length m), by doubling then bisection."""

    def ok(lo: int, hi: int) -> bool:
        return _affine(cols, lo, hi, [(hi + 1, steps)])

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


def _dims(cols: tuple[_Column | np.ndarray, ...]) -> list[tuple[int, tuple[int, ...]]] | None:
    """(extent, step of each column) of each grid digit, inner to outer, with every
    `cols[c]` = cols[c][0] + sum d_j * step_j[c]; None when no such grid exists. A column is
    an array or a `_Column` computed a block at a time."""
    cols = tuple(c if isinstance(c, _Column) else _Column(c.__getitem__, len(c)) for c in cols)
    n = len(cols[0])
    dims: list[tuple[int, tuple[int, ...]]] = []
    block = 1
    while block < n:
        subs = tuple(c.every(block) for c in cols)
        m = len(subs[0])
        steps = tuple(c.at(1) - c.at(0) for c in subs)
        e = _largest_divisor_upto(m, _linear_run(subs, steps, m))
        if e <= 1:
            return None
        dims.append((e, steps))
        block *= e
    return dims if _affine(cols, 0, n, dims) else None  # exact check of every cell


def strided_form(source: Callable[[np.ndarray], np.ndarray], n_dst: int, live: np.ndarray | None,
                 src_shape: tuple[int, ...], src_strides: tuple[int, ...]) -> StridedForm | None:
    """The affine form of a move plan read from an input of `src_shape` (C-order flat
    positions) laid out with byte `src_strides`; None when not affine. The plan is given as
    `source(positions)`, the input position each of the `n_dst` output positions reads, and
    `live` (None: every output is): it is asked a block at a time, so a plan never needs
    an index array of the whole output."""
    if live is None:  # every output position is live: the k-th cell is position k
        n, position = n_dst, (lambda k: k)
    else:
        pos = _live_positions(live)
        n, position = len(pos), pos.__getitem__
    if n == 0:
        return None
    cols = (_Column(position, n), _Column(lambda k: _offsets_at(src_shape, src_strides, source(position(k))), n))
    return _form(cols, lambda p0: int(source(np.array([p0], np.int64))[0]), live is None)


def strided_form_cells(cells: Any, source: Callable[[np.ndarray], np.ndarray], n_dst: int,
                       src_shape: tuple[int, ...], src_strides: tuple[int, ...]) -> StridedForm | None:
    """`strided_form` of a plan given by its live cells (`keys.LiveCells`: the flat position
    and key of the k-th live cell, a run of them by sums, no division per cell) and
    `source(keys)`, the input position holding each key. A digit of the cells that adds to
    no key (a broadcast: every value reads the same input cells) is checked at its first
    value only and joins the grid as a digit of input stride 0 (`_spread`): a DMA copying a
    tile to 64 slices checks one copy's cells, not 64 (issue 61, the first call)."""
    if cells.n == 0:
        return None

    def source_of_first(p0: int) -> int:
        return int(source(cells.at(np.zeros(1, np.int64))[1])[0])

    spread = [(i, len(p), int(p[1] - p[0])) for i, (p, q) in enumerate(cells.digits)
              if len(p) > 1 and not q.any() and np.array_equal(p, p[0] + (p[1] - p[0]) * np.arange(len(p)))]
    if spread:
        cols = _cell_columns(cells.fixing([i for i, _, _ in spread]), source, src_shape, src_strides)
        dims = _dims(cols)
        dims = None if dims is None else _spread(dims, spread, [len(p) for p, _ in cells.digits])
        if dims is not None:
            return _form(cols, source_of_first, cells.n == n_dst, dims)
    return _form(_cell_columns(cells, source, src_shape, src_strides), source_of_first, cells.n == n_dst)


def _cell_columns(cells: Any, source: Callable[[np.ndarray], np.ndarray], src_shape: tuple[int, ...],
                  src_strides: tuple[int, ...]) -> tuple[_Column, _Column]:
    """The (output position, input byte offset) columns of `cells` (`strided_form_cells`)."""
    def offs(flat: np.ndarray) -> np.ndarray:
        return _offsets_at(src_shape, src_strides, flat)
    last: list[Any] = [None, None]

    def run(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:   # both columns ask for the same runs
        if last[0] != (lo, hi):
            last[:] = [(lo, hi), cells.run(lo, hi)]
        return last[1]

    return (_Column(lambda k: cells.at(k)[0], cells.n, run=lambda lo, hi: run(lo, hi)[0]),
            _Column(lambda k: offs(source(cells.at(k)[1])), cells.n, run=lambda lo, hi: offs(source(run(lo, hi)[1]))))


def _spread(dims: list[tuple[int, tuple[int, ...]]], spread: list[tuple[int, int, int]],
            lengths: list[int]) -> list[tuple[int, tuple[int, ...]]] | None:
    """The grid `dims` (inner to outer) of cells whose digits `spread` ((index, extent,
    position step), outer to inner) were held at their first value, with those digits run
    over every value: each a grid digit of input stride 0 placed at its cell radix (the
    product of `lengths` of the digits inside it), a grid digit that straddles that radix
    cut in two; adjacent digits that continue one another merged. None when a grid digit
    straddles the radix and cannot be cut there."""
    for i, extent, step in reversed(spread):  # inner first: a digit's radix counts the ones inside it
        width, below, out = math.prod(lengths[i + 1:]), 1, None
        for j, (e, steps) in enumerate(dims):
            if below == width:
                out = dims[:j] + [(extent, (step, 0))] + dims[j:]
            elif below < width < below * e:
                if width % below or (below * e) % width:
                    return None
                a = width // below
                out = dims[:j] + [(a, steps), (extent, (step, 0)), (e // a, tuple(s * a for s in steps))] + dims[j + 1:]
            if out is not None:
                break
            below *= e
        if out is None:
            if below != width:
                return None
            out = [*dims, (extent, (step, 0))]
        dims = out
    merged = [dims[0]]
    for e, steps in dims[1:]:
        e0, s0 = merged[-1]
        if all(s == t * e0 for s, t in zip(steps, s0)):
            merged[-1] = (e0 * e, s0)
        else:
            merged.append((e, steps))
    return merged


def _form(cols: tuple[_Column, _Column], source_of_first: Callable[[int], int], dense: bool,
          dims: list[tuple[int, tuple[int, ...]]] | None = None) -> StridedForm | None:
    """The form whose grid `_dims` finds in (output position, input byte offset) columns
    (`dims`: that grid, found already)."""
    dims = _dims(cols) if dims is None else dims
    if dims is None:
        return None
    dims = dims[::-1]  # outer to inner
    extents = tuple(e for e, _ in dims)
    pstrides = tuple(int(s[0]) for _, s in dims)
    vstrides = tuple(int(s[1]) for _, s in dims)
    p0 = cols[0].at(0)
    return StridedForm(extents, pstrides, vstrides, p0, source_of_first(p0), dense and p0 == 0)


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
               live_rows: tuple[int, int, int] | None, threads: int = 1) -> np.ndarray:
    """The moved rows, (n_rows, n_dst): `rows` (n_rows, *src_local) is the input with
    padding rows holding zero; `live_rows` (first, step, count) the live rows evenly
    spaced, or None when they are not (then every row is moved). A view of the input when
    the output is a reshape of the grid, otherwise a new array (a large copy shared by
    `threads`)."""
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
        live = slice(r0, r0 + step * (count - 1) + 1, step)
        out[live] = apply_form(rows[live], form, n_dst, None)
        return out
    if padded and math.prod(form.extents) * 4 <= n_dst:  # a row mostly padding: fresh zero pages
        out = arena.zeros((n_rows, n_dst), rows.dtype, sparse=True)
        run, whole = None, False
    elif run is not None:  # one run of cells per row: zero only the cells around it (kept from a run before)
        out, zeroed = arena.empty_noted((n_rows, n_dst), rows.dtype, ("zero around", run, n_dst, rows.dtype.str))
        if not zeroed:
            out[:, :run[0]].fill(0)
            out[:, run[1]:].fill(0)
    elif padded and not whole:  # the grid's cells written, the rest zero, kept from a run before (issue 61)
        note = ("zero off grid", form, n_dst, rows.dtype.str, r0, step, count)
        out, zeroed = arena.empty_noted((n_rows, n_dst), rows.dtype, note)
        if not zeroed:
            out.fill(0)
    else:
        out = arena.empty((n_rows, n_dst), rows.dtype)
    if whole:
        out[:r0] = 0
        out[r0 + step * (count - 1) + 1:] = 0
        for k in range(1, step):  # the rows between two live ones
            out[r0 + k:r0 + step * (count - 1):step] = 0
    item = out.itemsize
    start = out[r0:, form.p0:]
    dst = as_strided(start, (count, *form.extents),
                     (out.strides[0] * step, *(p * item for p in form.pstrides)))
    copy_into(dst, source_view(rows, form, r0, step, count), threads)
    return out


def _dense_run(form: StridedForm, n_dst: int) -> tuple[int, int] | None:
    """(start, stop) of the cells `form` writes in a row when they are one run; else None."""
    total, inner = 1, 1
    for n, p in reversed([(n, p) for n, p in zip(form.extents, form.pstrides) if n > 1]):
        if p != inner:
            return None
        inner *= n
        total *= n
    stop = form.p0 + total
    return (form.p0, stop) if stop <= n_dst else None


FORMS = Lru(512)
"""Strided forms (or None: not affine) by (levels, input shape and strides)."""


def even_rows(live: np.ndarray, n_rows: int, even: slice | None = None) -> tuple[int, int, int] | None:
    """(first, step, count) of evenly spaced live rows, else None (`even`: them as a slice, if known)."""
    if len(live) == n_rows:
        return 0, 1, n_rows
    even = layout._even(live) if even is None else even
    return None if even is None else (even.start, even.step, len(live))
