"""Tensor Unit moves not copied yet: `LazyRows`, a strided read of an earlier buffer.

A per-slice move whose strided form (backends/cpu/moves_strided.py) covers every output
cell of every row is, often, a broadcast or a permutation that no numpy view of the
output's buffer shape can express (a time level whose digits read with strides 512 and
0 cannot be one axis). Copying it costs a pass over the (often many times larger)
output; instead the move returns a `LazyRows`: the base rows it reads and the form. A
later move composes its own form with it (still no copy), the contraction reads its
operands straight from the base (and learns from the zero strides, without comparing
any data, which digits an operand does not vary along), and every other consumer gets
the copied buffer (`materialize`), bit for bit the eager move's result.

A DMA that writes copies of the same rows into many slices (a broadcast: backends/cpu/
row_classes.py) gives a `LazyRows` whose base holds the distinct rows only and whose
`row_of` names, per spatial row, the base row it reads; the moves after it keep the map.
"""

from __future__ import annotations

import functools

import attrs
import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu.gathers import Gather, _affine
from backends.cpu.lru import MISSING, Lru
from backends.cpu.moves_strided import StridedForm, _Column, _dims, _live_positions, apply_form

__all__ = ["LazyRows", "lazy_or_copy", "materialize", "filled", "compose_form", "gather_view",
           "base_gather"]


@attrs.frozen(eq=False)
class LazyRows:
    """Row r, output cell p of a move: `base[r]` read by `form` (`v0` a position of a
    base row, `vstrides` in bytes; `full`: no padding cell). `base` is (rows, n) with
    contiguous rows; `shape` the output buffer's shape. With `row_of` (one base row per
    spatial row), row r reads `base[row_of[r]]` instead: `base` holds distinct rows.
    A form with padding cells (not `full`: a turned stream's packet padding, held without
    it, backends/cpu/engines.py) reads zero there; it is copied out for a contraction, and a
    move composes with it only when it reads none of them (`compose_form`)."""

    base: np.ndarray
    form: StridedForm
    n_dst: int
    shape: tuple[int, ...]
    row_of: np.ndarray | None = None

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype

    @property
    def n_rows(self) -> int:
        return self.base.shape[0] if self.row_of is None else len(self.row_of)

    def rows(self, picked: slice | np.ndarray) -> LazyRows:
        """The spatial rows `picked` only, as (rows, cells) (any rows of an index array when
        `row_of` maps them; `base`'s rows picked, a copy, otherwise)."""
        if self.row_of is not None:
            row_of = self.row_of[picked]
            return LazyRows(self.base, self.form, self.n_dst, (len(row_of), self.n_dst), row_of)
        base = self.base[picked]
        return LazyRows(base, self.form, self.n_dst, (base.shape[0], self.n_dst))

    def distinct(self) -> LazyRows:
        """The base rows as a lazy buffer of their own (every row read once)."""
        return LazyRows(self.base, self.form, self.n_dst, (self.base.shape[0], self.n_dst))


def lazy_or_copy(rows: np.ndarray, form: StridedForm, n_dst: int, shape: tuple[int, ...]) -> LazyRows | None:
    """A `LazyRows` for this move when it has no padding cell and its input rows are
    contiguous (then a position is a byte offset / itemsize); None otherwise. Padding rows
    of the input hold zero (backends/cpu/layout.py), so reading them gives the zero rows
    the eager move writes."""
    if not form.full:
        return None
    try:
        base = np.reshape(rows, (rows.shape[0], -1), copy=False)
    except ValueError:
        return None
    if base.ndim != 2 or (base.shape[1] > 1 and base.strides[1] != base.itemsize):
        return None
    return LazyRows(base, form, n_dst, shape)


def materialize(buf):
    """The buffer itself: a `LazyRows` copied out (the eager move's exact result)."""
    if isinstance(buf, LazyRows):
        out = apply_form(buf.base, buf.form, buf.n_dst, None)
        return (out if buf.row_of is None else out[buf.row_of]).reshape(buf.shape)
    return buf


def filled(buf: LazyRows) -> LazyRows:
    """`buf` with its base rows copied out whole when its form has padding cells (the map
    kept): for a reader of the base (a contraction), which takes full forms only."""
    if buf.form.full:
        return buf
    out = np.ascontiguousarray(apply_form(buf.base, buf.form, buf.n_dst, None))
    identity = StridedForm((buf.n_dst,), (1,), (out.itemsize,), 0, 0, True)
    return LazyRows(out, identity, buf.n_dst, buf.shape, buf.row_of)


def _offsets(form: StridedForm, n_dst: int, item: int, cells: np.ndarray) -> np.ndarray:
    """Byte offset, within a base row, of the output cells `cells` of a full `form`: each
    cell's digits over the form's grid, found from the cell (the grid's output strides,
    sorted, are a mixed radix of the cells), times their input strides; no table of every
    cell is made or kept for a few cells (issue 61, first-run memory).
    A grid that is no mixed radix is tabulated."""
    if not form.full:
        return padded_offsets(form, item, cells)[0]
    digits = sorted((p, n, v) for n, p, v in zip(form.extents, form.pstrides, form.vstrides) if n > 1)
    step = 1
    for p, n, _ in digits:
        if p != step:
            return _offset_table(form, n_dst, item)[cells]
        step *= n
    out = np.full(cells.shape, form.v0 * item, np.int64)
    for p, n, v in digits:
        out += (cells // p % n) * v
    return out


def _nested(form: StridedForm) -> list[tuple[int, int, int]] | None:
    """The form's digits (output stride, extent, input byte stride), outer to inner, when
    each one's output stride is past every cell the digits inside it reach (a cell's digits
    are then found by division, outer first); None otherwise."""
    digits = sorted(((p, n, v) for n, p, v in zip(form.extents, form.pstrides, form.vstrides) if n > 1),
                    reverse=True)
    reach = 0
    for p, n, _ in reversed(digits):
        if p <= reach:
            return None
        reach += (n - 1) * p
    return digits


def padded_offsets(form: StridedForm, item: int, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(byte offset within a base row, whether the cell is one of the form's) of output
    cells `cells` of a form with padding cells (a padding cell's offset is meaningless);
    every cell padding when the form's grid is not `_nested`."""
    digits = _nested(form)
    if digits is None:
        return np.zeros(cells.shape, np.int64), np.zeros(cells.shape, bool)
    rest = np.asarray(cells, np.int64) - form.p0
    live = rest >= 0
    out = np.full(rest.shape, form.v0 * item, np.int64)
    for p, n, v in digits:
        d = rest // p
        live &= d < n
        rest -= d * p
        out += d * v
    live &= rest == 0
    return out, live


def _reads_padding(form: StridedForm, item: int, source, position, n: int) -> bool:
    """Whether a move whose k-th live output cell reads cell `source(position(k))` of a lazy
    buffer of `form` reads one of its padding cells (looked at a block at a time)."""
    block = 1 << 16
    for lo in range(0, n, block):
        cells = source(position(np.arange(lo, min(n, lo + block), dtype=np.int64)))
        if not padded_offsets(form, item, cells)[1].all():
            return True
    return False


@functools.lru_cache(maxsize=8)
def _offset_table(form: StridedForm, n_dst: int, item: int) -> np.ndarray:
    """`_offsets` of every cell, as a table (a grid whose output strides are no mixed radix)."""
    out = np.zeros(n_dst, np.int64)
    grid = as_strided(out, form.extents, tuple(p * 8 for p in form.pstrides))
    acc = np.full((1,) * len(form.extents), form.v0 * item, np.int64)
    for k, (n, v) in enumerate(zip(form.extents, form.vstrides)):
        shape = [1] * len(form.extents)
        shape[k] = n
        acc = acc + (np.arange(n, dtype=np.int64) * v).reshape(shape)
    grid[...] = acc
    return out


_COMPOSED = Lru(512)


def compose_form(get_source, lazy: LazyRows, key: tuple) -> StridedForm | None:
    """The strided form, relative to `lazy.base`, of a move read from `lazy`; None when it
    is not affine. `get_source()` gives the move's plan as (`source(positions)`, the lazy
    buffer's cell each output position reads; the output's size; its live positions or
    None when all are): asked a block at a time, so no index of every output cell is made
    (issue 61). Cached by `key` (the plan's levels) and the lazy form, so the plan is made
    on the first call only."""
    full_key = (key, lazy.form, lazy.n_dst, lazy.base.itemsize)
    found = _COMPOSED.get(full_key, MISSING)
    if found is not MISSING:
        return found
    source, n_out, live = get_source()
    if live is None:
        n, position = n_out, (lambda k: k)
    else:
        pos = _live_positions(live)
        n, position = len(pos), pos.__getitem__
    form = None
    item = lazy.base.itemsize
    if n and not (not lazy.form.full and _reads_padding(lazy.form, item, source, position, n)):
        cols = (_Column(position, n),
                _Column(lambda k: _offsets(lazy.form, lazy.n_dst, item, source(position(k))), n))
        dims = _dims(cols)
        if dims is not None:
            dims = dims[::-1]
            first = int(cols[1].at(0))
            form = StridedForm(tuple(e for e, _ in dims), tuple(int(s[0]) for _, s in dims),
                               tuple(int(s[1]) for _, s in dims), int(cols[0].at(0)), first // item,
                               live is None and int(cols[0].at(0)) == 0)
    return _COMPOSED.put(full_key, form)


@functools.lru_cache(maxsize=256)
def _affine_cells(form: StridedForm, n_dst: int, item: int, gather) -> tuple[int, tuple[int, ...]] | None:
    """(first byte offset, byte strides) of the cells `gather.index` (C order over
    `gather.shape`) of a lazy buffer with this form, when affine with non-negative strides."""
    cells = gather.index  # their offsets found a block at a time: no offset of every cell (issue 61)
    return _affine(cells.reshape(gather.shape), lambda block: _offsets(form, n_dst, item, block))


def gather_view(lazy: LazyRows, gather) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """The cells a contraction layout reads (`gather.index`, flat cells of the lazy buffer
    in C order over `gather.shape`, backends/cpu/contract_plan.py) of every base row (of
    every row but with `row_of`: of the distinct rows), as a strided view (base rows,
    *shape) of the base with its byte strides; None when they are not affine. Found once
    per gather and form."""
    if gather.size == 0 or not lazy.form.full:
        return None
    found = _affine_cells(lazy.form, lazy.n_dst, lazy.base.itemsize, gather)
    if found is None:
        return None
    base0, strides = found
    item = lazy.base.itemsize
    view = as_strided(lazy.base[:, base0 // item:], (lazy.base.shape[0], *gather.shape),
                      (lazy.base.strides[0], *strides), writeable=False)
    return view, strides


@functools.lru_cache(maxsize=256)
def _base_gather(form: StridedForm, n_dst: int, item: int, gather):
    found = _affine_cells(form, n_dst, item, gather) if gather.size else None
    if found is not None and all(v % item == 0 for v in (found[0], *found[1])):  # whole elements
        # affine: no index of every cell kept (`Gather.index` makes it on a reading; kept in
        # this cache, it was 1 MiB of int64 on drawn_s2_3: issue 61, first-run memory)
        return Gather(gather.digits, gather.shape, gather.groups, None, found[0] // item,
                      tuple(v // item for v in found[1]))
    index = _offsets(form, n_dst, item, gather.index) // item
    found = _affine(index.reshape(gather.shape)) if index.size else None
    offset, strides = found if found is not None else (None, None)
    return Gather(gather.digits, gather.shape, gather.groups, index, offset, strides)


def base_gather(lazy: LazyRows, gather):
    """`gather` (cells of the lazy buffer) re-aimed at the cells of `lazy.base` they read:
    the same layout, so reading it from the base gives the same values as reading `gather`
    from the copied-out buffer. The same object for the same gather and form (the float
    cores cache their own tables per gather)."""
    return _base_gather(lazy.form, lazy.n_dst, lazy.base.itemsize, gather)
