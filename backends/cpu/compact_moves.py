"""The moves of values that hold their live rows only (backends/cpu/compact.py).

`move_local` and `move_global` take and give `Compact` values where `moves.move_local` and
`moves.move_global` take full buffers (and call those for everything else):

- a per-slice move of a `Compact` moves its live rows only; asked for a lazy result, it
  gives a `Pending` instead: the rows it reads and the moves still to make, so that a
  chain of moves (fetch, collect, a trim: the Vector Engine's way in) is made as one
  move, by the composed plan (a view when that composition only regroups the cells);
- a DMA of a value of one live row reads (or writes) that row alone when its strided form
  stays inside the row.

A `Pending` is made a `Compact` (`realize`) for every handler that does not take lazy
operands (`prepare`); the composed move gives, cell for cell, what the moves one after
the other give: output cell p reads input cell index1[index2[p]] when live2[p] and
live1[index2[p]], else holds zero.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np
from numpy.lib.stride_tricks import as_strided

from ir.mapping.nodes import Mapping
from ir.types import Type

from backends.cpu import compact, layout, lazy_rows, moves, moves_strided
from backends.cpu.compact import Compact
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.lru import Lru

__all__ = ["Pending", "move_local", "move_global", "plan_of", "realize", "prepare", "materialize", "trim"]

Levels = tuple[Mapping, ...]


@attrs.frozen(eq=False)
class Pending:
    """A value of type `t` not made yet: the live rows `base` (rows, *sizes of the first
    move's input levels) moved by `chain`, ((input levels, output levels), ...) in order."""

    base: np.ndarray
    chain: tuple[tuple[Levels, Levels], ...]
    t: Type

    shape = Compact.shape  # the buffer shape of `t` and the dtype of `base`, as a `Compact`'s
    dtype = Compact.dtype


_COMPOSED = Lru(64)


def _plan(chain: tuple[tuple[Levels, Levels], ...]) -> moves.MovePlan:
    """The plan of the moves of `chain` one after the other (kept for the last 64 chains)."""
    if len(chain) == 1:
        return moves.move_plan(*chain[0])
    found = _COMPOSED.get(chain)
    if found is not None:
        return found
    first, second = _plan(chain[:-1]), moves.move_plan(*chain[-1])
    index = first.index[second.index]
    live = None if first.live is None else first.live[second.index]
    if second.live is not None:
        live = second.live if live is None else live & second.live
    return _COMPOSED.put(chain, moves.MovePlan(np.where(live, index, 0) if live is not None else index, live))


def plan_of(value: Pending) -> moves.MovePlan:
    """The composed plan of a `Pending`'s moves: output cell p of a row reads cell
    `index[p]` of its base row (zero where `live` is False)."""
    return _plan(value.chain)


def realize(value: Pending) -> Compact:
    """The `Compact` a `Pending` stands for: its moves made as one."""
    rows, chain = value.base, value.chain
    tail = tuple(mp.size for mp in layout.local_levels(value.t))
    n_dst = math.prod(tail)
    form = moves.strided_form_of(rows, chain[0][0], chain[-1][1], plan=_plan(chain) if len(chain) > 1 else None,
                                 key=chain if len(chain) > 1 else None)
    if form is None:
        return compact.make(moves.gather_rows(rows, _plan(chain)), value.t)
    out = moves_strided.as_view(rows, form, n_dst)
    return compact.make(out if out is not None else moves_strided.apply_form(rows, form, n_dst, None), value.t)


def materialize(value):
    """The full buffer of any value (a `Pending`, a `Compact`, a `LazyRows`)."""
    return prepare(value, False, False)


def prepare(value, lazy: bool, takes_compact: bool):
    """An operand as a handler takes it: a `Compact` kept for a `compact` handler, a
    `LazyRows` for a `lazy` one, a `Pending` for one taking both (else made first);
    otherwise the full buffer."""
    if isinstance(value, Pending) and not (lazy and takes_compact):
        value = realize(value)
    if isinstance(value, Compact):
        return value if takes_compact else value.full()
    return value if lazy else lazy_rows.materialize(value)


def move_local(buf: np.ndarray | LazyRows | Compact | Pending, src: Type, dst: Type, fast: bool = True,
               lazy: bool = False, fresh: bool = False) -> np.ndarray | LazyRows | Compact | Pending:
    """`moves.move_local` (every level of `src` read), on the live rows only when `buf`
    holds those only or (`fresh`) when `dst` has few: then a `Compact`, or with `lazy`
    a `Pending` (of a move not made yet, `LazyRows`, of every row: its live rows moved, a `Compact`)."""
    src_local, dst_local = layout.local_levels(src), layout.local_levels(dst)
    same_rows = layout.spatial_levels(src) == layout.spatial_levels(dst)
    if isinstance(buf, Pending):
        if fast and same_rows and lazy:
            return Pending(buf.base, (*buf.chain, (src_local, dst_local)), dst)
        buf = realize(buf)
    if fast and same_rows and fresh and isinstance(buf, LazyRows) and buf.row_of is None and compact.wanted(dst):
        rows = moves.lazy_live_rows(buf, src, dst)  # a move not made yet, of every row: its live rows moved
        if rows is not None:
            return compact.make(rows, dst)
    if fast and same_rows and (isinstance(buf, Compact) or (fresh and not isinstance(buf, LazyRows)
                                                             and compact.wanted(dst))):
        rows = compact.rows_of(buf, src)
        rows = rows.reshape(rows.shape[0], *(mp.size for mp in src_local))
        pending = Pending(rows, ((src_local, dst_local),), dst)
        return pending if lazy else realize(pending)
    return moves.move_local(compact.full(buf), src, dst, fast=fast, lazy=lazy)


@functools.lru_cache(maxsize=64)
def _trim_is_move(src_local: Levels, dst_local: Levels, size: int) -> bool:
    """Whether keeping the leading `size` cells of every packet (commit_trim) gives, cell for
    cell, the move from `src_local` to `dst_local` (time, packet): each kept cell the one the
    move reads, or padding of both."""
    plan = moves.move_plan(src_local, dst_local)
    n_time, n_in = src_local[0].size, src_local[1].size
    if dst_local[0].size != n_time or dst_local[1].size != size or size > n_in:
        return False
    kept = (np.arange(n_time)[:, None] * n_in + np.arange(size)[None, :]).reshape(-1)
    live = np.ones(kept.size, bool) if plan.live is None else plan.live
    src_pad = moves.logical_pad(src_local)
    return bool(np.array_equal(plan.index[live], kept[live]) and src_pad[kept[~live]].all())


def trim(buf: np.ndarray | Compact | Pending | LazyRows, src: Type, dst: Type,
         size: int) -> Compact | Pending | LazyRows | np.ndarray | None:
    """commit_trim of a value of live rows only (None: a full buffer, or other rows): a
    `Pending` composed with the trim when that trim is a move, else the trimmed rows. Of a
    move not copied yet (`LazyRows`: a transposed broadcast's distinct rows) when the trim is
    a move: that move composed with it (a `LazyRows` still, when the composition covers every cell)."""
    if not isinstance(buf, (Compact, Pending, LazyRows)) or layout.spatial_levels(src) != layout.spatial_levels(dst):
        return None
    src_local, dst_local = layout.local_levels(src), layout.local_levels(dst)
    if isinstance(buf, LazyRows):
        return moves.move_local(buf, src, dst, lazy=True) if _trim_is_move(src_local, dst_local, size) else None
    if isinstance(buf, Pending) and _trim_is_move(src_local, dst_local, size):
        return Pending(buf.base, (*buf.chain, (src_local, dst_local)), dst)
    rows = (realize(buf) if isinstance(buf, Pending) else buf).base
    if rows.shape[-1] == size:  # every cell of every packet kept (the rows hold no padding): as they are
        return compact.make(rows, dst)
    return compact.make(moves.trim(rows, size), dst)


def move_global(buf: np.ndarray | Compact, src: Type, dst: Type, fast: bool = True,
                fresh: bool = False, copies: bool = False, threads: int = 1) -> np.ndarray | Compact | LazyRows:
    """`moves.move_global`; a `Compact` `buf` of one live row is read in place, and
    (`fresh`) a result of one live row is made a `Compact`, when the DMA's strided form
    stays inside that row; `copies`: a broadcast may be held as its distinct rows;
    `threads`: the threads sharing a large copy."""
    src_levels = (*layout.spatial_levels(src), *layout.local_levels(src))
    dst_levels = (*layout.spatial_levels(dst), *layout.local_levels(dst))
    if fast and isinstance(buf, Compact):
        out = _from_one_row(buf, src_levels, dst_levels)
        if out is not None:
            return out.reshape(layout.shape_of(dst))
    buf = compact.full(buf)
    if fast and fresh and compact.wanted(dst) and layout.even_rows(dst) is not None:
        # a broadcast's distinct rows first: fewer rows than the live ones, and a reader
        # (the Transpose Engine, a contraction) works once per distinct row
        found = moves.broadcast_copies(buf, src, dst) if copies else None
        found = _into_live_rows(buf, src_levels, dst) if found is None else found
        if found is not None:
            return found
        copies = False  # asked above: no broadcast
    return moves.move_global(buf, src, dst, fast=fast, copies=copies, threads=threads)


def _carrier(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of one row of `shape` with C-order strides, reading one element: what
    `moves.strided_form_of` needs (shape, strides, item size) of a buffer that is not made."""
    strides, step = [], np.dtype(dtype).itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return as_strided(np.zeros(1, dtype), (1, *shape), (0, *reversed(strides)), writeable=False)


def _from_one_row(buf: Compact, src_levels: Levels, dst_levels: Levels) -> np.ndarray | None:
    """The DMA of a `Compact` of one live row when it reads that row only, as (1, cells)."""
    live = layout.live_rows(buf.t)
    form = moves.strided_form_of(_carrier(buf.shape, buf.dtype), src_levels, dst_levels) if len(live) == 1 else None
    if form is not None:
        form = compact.read_in_row(form, buf.base.size, buf.base.itemsize, int(live[0]))
    if form is None:
        return None
    return moves_strided.apply_form(np.ascontiguousarray(buf.base).reshape(1, -1), form,
                                    math.prod(mp.size for mp in dst_levels), None)


def _into_live_rows(buf: np.ndarray, src_levels: Levels, dst: Type) -> Compact | None:
    """The DMA into a type of evenly spaced live rows, as a `Compact`, when it writes those
    rows only: the padding rows (the slices a kernel on a fraction of the slices leaves
    empty) are never made. Their pages would be: a slice's row is often smaller than a page,
    so a full buffer written on every 4th row touches every page of it (issue 61, first-run
    memory)."""
    rows = buf.reshape(1, *buf.shape)
    form = moves.strided_form_of(rows, src_levels, (*layout.spatial_levels(dst), *layout.local_levels(dst)))
    row_len = math.prod(mp.size for mp in layout.local_levels(dst))
    even = layout.even_rows(dst)
    count = len(layout.live_rows(dst))
    if form is not None:
        form = compact.write_in_rows(form, row_len, even.start, even.step if count > 1 else 1, count)
    if form is None:
        return None
    return compact.make(moves_strided.apply_form(rows, form, count * row_len, None).reshape(count, row_len), dst)

