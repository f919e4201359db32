"""Values of the cpu backend that hold their live spatial rows only: `Compact`.

A Tensor Unit value lives in (chip, cluster, slice) rows of which a kernel often uses few
(one slice of 512: a `Slice = m("1 # 256")` kernel); its full buffer (backends/cpu/layout.py)
is mostly padding rows of zero. The per-slice stages compute on the live rows only
anyway, so the Vector Engine chain and the per-slice moves pass a `Compact` along instead:
the live rows (in `layout.live_rows` order) and the value's type. A handler declared
`compact=True` (backends/cpu/handlers.py) takes one and returns one; every other consumer
gets the full buffer (`compact_moves.prepare`: padding rows zero, bit for bit the buffer the eager
path makes), once, for all later readers.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

from ir.types import Type

from backends.cpu import layout
from backends.cpu.moves_strided import StridedForm

__all__ = ["Compact", "wanted", "make", "rows_of", "full", "read_full", "read_in_row", "write_in_row", "write_in_rows", "live_steps"]


@attrs.frozen(eq=False)
class Compact:
    """A value of type `t` by its live rows: `base` is (live rows, *local level sizes of
    `t`), row i the spatial row `layout.live_rows(t)[i]`."""

    base: np.ndarray
    t: Type

    @property
    def shape(self) -> tuple[int, ...]:
        return layout.shape_of(self.t)

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype

    def full(self) -> np.ndarray:
        """The full buffer: the live rows in place, zero elsewhere."""
        return layout.from_rows(self.base, self.t).reshape(self.shape)


@functools.lru_cache(maxsize=256)
def _sparse(levels: tuple) -> bool:
    return 0 < len(layout._live_rows(levels)) < math.prod(mp.size for mp in levels)


def wanted(t: Type) -> bool:
    """Whether a value of `t` is worth holding compact: some, not all, of its rows live."""
    return _sparse(layout.spatial_levels(t))


def make(rows: np.ndarray, t: Type) -> Compact:
    """The value of `t` whose live rows are `rows` (live rows, ...), reshaped to `t`'s local levels."""
    local = tuple(mp.size for mp in layout.local_levels(t))
    return Compact(rows.reshape(rows.shape[0], *local), t)


def rows_of(buf: np.ndarray | Compact, t: Type) -> np.ndarray:
    """The live rows of a value of type `t` (or of `t`'s spatial levels), as (rows, *local)."""
    return buf.base if isinstance(buf, Compact) else layout.rows_view(buf, t)


def full(value):
    """The value as a buffer: a `Compact` placed into its full buffer; anything else as is."""
    return value.full() if isinstance(value, Compact) else value


def read_full(steps, gathers=lambda step: False) -> set[int]:
    """The value ids of a kernel's walk (the executor's steps: `op`, `operands`, `result`,
    `lazy`, `compact`) that a handler taking `LazyRows` but not `Compact` operands reads
    (the contraction and to_trf, which read a move's strided form and the row classes of
    its DMA: backends/cpu/row_classes.py), directly or through moves that take both (not
    through a step that `gathers` new rows: a broadcasting switch); a move does not make a
    `Compact` of these, so that chain keeps what it reads."""
    fed: set[int] = set()
    for s in reversed(steps):
        if (s.lazy and not s.compact) or (s.compact and s.result in fed and not gathers(s)):
            fed.update(s.operands)
    return fed


def _span(start: int, extents: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """(lowest, highest) offset a digit grid reaches from `start`."""
    lo = hi = start
    for n, step in zip(extents, strides):
        lo += min(0, (n - 1) * step)
        hi += max(0, (n - 1) * step)
    return lo, hi


def read_in_row(form: StridedForm, row_len: int, item: int, row: int) -> StridedForm | None:
    """A DMA's strided form on a full input buffer of rows of `row_len` elements, as a form
    on row `row` alone (a buffer of that one row) when it reads no other row; else None."""
    lo, hi = _span(form.v0 * item, form.extents, form.vstrides)
    if lo < row * row_len * item or hi >= (row + 1) * row_len * item:
        return None
    return attrs.evolve(form, v0=form.v0 - row * row_len)


def write_in_row(form: StridedForm, row_len: int, row: int) -> StridedForm | None:
    """A DMA's strided form into a full output buffer of rows of `row_len` elements, as a
    form writing row `row` alone (a buffer of that one row) when it writes no other row;
    else None."""
    return write_in_rows(form, row_len, row, 1, 1)


def write_in_rows(form: StridedForm, row_len: int, row0: int, every: int, count: int) -> StridedForm | None:
    """A DMA's strided form into a full output buffer of rows of `row_len` elements, as a
    form writing rows `row0 + i * every` (i < `count`) alone, stored one after the other
    (a buffer of those rows), when it writes no other row; else None. Each digit of the
    form steps inside a row or steps whole written rows (consecutive rows: any digit that
    stays inside them)."""
    if every == 1:
        lo, hi = _span(form.p0, form.extents, form.pstrides)
        if lo < row0 * row_len or hi >= (row0 + count) * row_len:
            return None
        return attrs.evolve(form, p0=form.p0 - row0 * row_len, full=False)
    found = live_steps(form.p0, form.extents, form.pstrides, row_len, row0, every, count)
    return None if found is None else attrs.evolve(form, p0=found[0], pstrides=found[1], full=False)


def live_steps(first: int, extents: tuple[int, ...], steps: tuple[int, ...], row_bytes: int, row0: int,
               every: int, count: int) -> tuple[int, tuple[int, ...]] | None:
    """A strided read (or write) of a full buffer (offset `first` of its first cell, `steps`,
    in bytes or in elements as `row_bytes` is) as the same access of its live rows alone,
    rows `row0 + i * every` (i < `count`) stored one after the other: (the first cell's
    offset there, the steps), or None when the access leaves the live rows or a step
    neither stays inside a row nor steps whole live rows (backends/cpu/views.py reads a
    value of live rows with it, `write_in_rows` writes one)."""
    row, col = divmod(first, row_bytes)
    if row < row0 or (row - row0) % every:
        return None
    out, last_row, last_col = [], row, col
    for n, st in zip(extents, steps):
        if n == 1:
            out.append(0)
        elif st > 0 and st % (row_bytes * every) == 0:
            out.append(st // every)
            last_row += (n - 1) * (st // row_bytes)
        elif 0 <= st and (n - 1) * st < row_bytes:
            out.append(st)
            last_col += (n - 1) * st
        else:
            return None
    if last_col >= row_bytes or last_row > row0 + (count - 1) * every:
        return None
    return (row - row0) // every * row_bytes + col, tuple(out)
