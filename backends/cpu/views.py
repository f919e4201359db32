"""cpu handlers of `new`, `window`, `to_view`, `memset` (docs/views.md) and `rf_reshape`: offsets per level.

A buffer has one numpy axis per level (backends/cpu/layout.py); a view names, on every
level, the positions `p + offset` of its base for the live positions `p` of its own
mapping, and padding cells hold zero. The live positions of a level come from its factor
form (a pure padding factor holds data at its first cell only), so no cell table is built.
When every level's live positions form a grid (`p0 + sum i_k * s_k`, as a tile's rows
and columns do), the cells are read and written through strided views (one copy, no index
arrays); otherwise by `np.ix_`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ir.mapping.live import live_grid, live_positions
from ir.runtime_types import checked_start
from ir.rules.views import fill_pattern
from ir.rf_reshape import RfReshape
from ir.view_ops import Memset, NewTensor, ToView, Window

from backends.cpu import affine_grid, arena, compact_moves, layout, lazy_rows, moves, moves_strided
from backends.cpu.compact import Compact, _span, live_steps as _live_steps
from backends.cpu.compact_moves import Pending
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.lru import MISSING, Lru
from backends.cpu.options import DEFAULT, CpuOptions
from backends.cpu.handlers import handles
from backends.cpu.wide_copy import wide_runs

__all__: list[str] = []


def _grid(t: object, offsets: tuple[int, ...] | None = None) -> tuple[np.ndarray, ...]:
    live = [live_positions(mp) for mp in t.levels()]  # type: ignore[attr-defined]
    if offsets is not None:
        live = [p + o for p, o in zip(live, offsets)]
    return np.ix_(*live)


@functools.lru_cache(maxsize=1024)
def _affine(mapping: object) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """The live positions of a level as (p0, ((count, step), ... outermost first)), every
    position `p0 + sum i_k * step_k`; None when they are no such grid (or none are live).
    From the factors when no factor is ragged (`live_grid`: no array of every position)."""
    grid = live_grid(mapping)
    if grid is not None:
        return grid
    q = live_positions(mapping)
    dims = moves_strided._dims((q,)) if len(q) else None
    if dims is None:
        return None
    return int(q[0]), tuple((count, int(steps[0])) for count, steps in reversed(dims))


def _grid_form(t: object) -> tuple[tuple[int, tuple[tuple[int, int], ...]], ...] | None:
    forms = tuple(_affine(mp) for mp in t.levels())  # type: ignore[attr-defined]
    return None if any(f is None for f in forms) else forms


def _cells(buf: np.ndarray, forms: tuple, offsets: tuple[int, ...] | None, writeable: bool) -> np.ndarray:
    """A strided view of `buf` (one axis per level) on the grid cells `forms` (shifted by
    `offsets`): one view axis per grid dimension."""
    offsets = offsets or (0,) * len(forms)
    start = buf[tuple(slice(p0 + o, None) for (p0, _), o in zip(forms, offsets))]
    shape, strides = [], []
    for (_, dims), st in zip(forms, buf.strides):
        shape += [count for count, _ in dims]
        strides += [step * st for _, step in dims]
    shape += buf.shape[len(forms):]  # axes past the levels (none in a buffer): whole
    strides += buf.strides[len(forms):]
    return np.lib.stride_tricks.as_strided(start, tuple(shape), tuple(strides), writeable=writeable)


def _copy_cells(dst: np.ndarray, dst_offsets: tuple[int, ...] | None, src: np.ndarray,
                src_offsets: tuple[int, ...] | None, t: object) -> None:
    """dst[live cells of `t` + dst_offsets] = src[live cells of `t` + src_offsets]."""
    forms = _grid_form(t)
    if forms is None:
        dst[_grid(t, dst_offsets)] = src[_grid(t, src_offsets)]
        return
    _cells(dst, forms, dst_offsets, True)[...] = _cells(src, forms, src_offsets, False)


@handles(RfReshape)
def rf_reshape(op: RfReshape, src: np.ndarray) -> np.ndarray:
    """A register-file relabel: a buffer has one axis per level by position, and every level
    keeps its size and (Chip, Cluster, Slice) its live positions, so the cells are the same."""
    return src


@handles(NewTensor)
def new(op: NewTensor) -> np.ndarray:
    """A tensor of zeros."""
    t = op.result.type
    return np.zeros(layout.shape_of(t), layout.storage_dtype(t.dtype))


def _shifted(op: Window | ToView | Memset, start: np.ndarray | None, what: str) -> tuple[int, ...]:
    """The op's cell offsets, the element's moved by its runtime `start` (RUNTIME-10 past its limit)."""
    if start is None:
        return op.offset
    return (*op.offset[:-1], op.offset[-1] + checked_start(start, op.start_limit, what) * op.start_stride)


@handles(Window)
def window(op: Window, base: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """The base's cells at the view's live positions shifted by the offsets (the element
    offset by `start * start_stride` more at a runtime start, RUNTIME-10 past its limit);
    padding zero."""
    t = op.result.type
    offset = _shifted(op, start, "a tile read at a runtime start")
    forms = _grid_form(t)
    whole = forms is not None and all(math.prod(c for c, _ in dims) == mp.size
                                      for (_, dims), mp in zip(forms, t.levels()))
    if whole:  # every cell a base cell on one strided grid: a read-only view of the base when
        try:     # the grid is the levels' shape (issue 61: a batched kernel copied its 8 MiB
            return np.reshape(_cells(base, forms, offset, False), layout.shape_of(t), copy=False)  # operand per tile)
        except ValueError:  # the grid's axes do not merge into the levels': copied
            pass
    if whole:  # every cell written
        out = arena.empty(layout.shape_of(t), base.dtype)
    else:  # padding zero: a buffer this window's type left zero around its cells (an earlier run's) kept so
        out, zeroed = arena.empty_noted(layout.shape_of(t), base.dtype, ("zero around", "window", t))
        if not zeroed:
            out.fill(0)
    _copy_cells(out, None, base, offset, t)
    return out


@functools.lru_cache(maxsize=256)
def _direct_form(src_t: object, view: object, src_shape: tuple[int, ...], src_strides: tuple[int, ...],
                 out_shape: tuple[int, ...], out_strides: tuple[int, ...]) -> tuple | None:
    """The DMA of `to_view` as one strided copy from the source into the destination:
    (first source element, its C position in `src_shape`; extents; source byte steps;
    destination byte steps, from the view's first live cell at offset 0), every live cell of
    the view once, each reading the source cell the move plan names. None when some live
    cell has no source (it would be written zero) or the pairs are not one affine grid."""
    levels = (*layout.spatial_levels(view), *layout.local_levels(view))  # type: ignore[arg-type]
    shape = tuple(mp.size for mp in levels)
    if len(shape) != len(out_shape) or any(n > m for n, m in zip(shape, out_shape)):
        return None
    src_levels = (*layout.spatial_levels(src_t), *layout.local_levels(src_t))  # type: ignore[arg-type]
    live = [_LiveAt.of(mp) for mp in levels]  # a grid's positions from its form: no array (issue 61)
    n = math.prod(len(p) for p in live)
    if not n:
        return None
    c_steps = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    plan = moves.planner(src_levels, levels)

    def source(k: np.ndarray) -> np.ndarray:  # the source's byte offsets of the view's k-th live cells
        index, found = plan(_nth(live, c_steps, k))
        if not found.all():
            raise _NoSource
        return moves_strided._offsets_at(src_shape, src_strides, index)

    cols = (moves_strided._Column(lambda k: _nth(live, out_strides, k), n), moves_strided._Column(source, n))
    try:  # a block of cells at a time: no table of every live cell (issue 61, first-run memory); the
        dims = moves_strided._dims(cols)  # grid found is checked at every cell, so every one has a source
    except _NoSource:
        return None
    if dims is None:
        return None
    dims = dims[::-1]
    first = int(plan(_nth(live, c_steps, np.zeros(1, np.int64)))[0][0])
    return (first, tuple(e for e, _ in dims), tuple(int(st[1]) for _, st in dims),
            tuple(int(st[0]) for _, st in dims), cols[0].at(0))


class _NoSource(Exception):
    """A live cell of the view that no source cell holds (`_direct_form` has no form)."""


class _LiveAt:
    """The live positions of a level, read by their rank (`at`): computed from the level's
    grid form (`_affine`) when it has one, so no int64 array of every live position is made
    for a large level (a whole output tensor's element level: 4 MiB for 512 Ki cells);
    else the positions array itself."""

    def __init__(self, grid: tuple[int, tuple[tuple[int, int], ...]] | None, positions: np.ndarray | None) -> None:
        self.grid, self.positions = grid, positions
        self.count = len(positions) if grid is None else math.prod(c for c, _ in grid[1])

    @classmethod
    def of(cls, mapping: object) -> _LiveAt:
        grid = _affine(mapping)
        return cls(grid, None if grid is not None else live_positions(mapping))

    def __len__(self) -> int:
        return self.count

    def at(self, rank: np.ndarray) -> np.ndarray:
        """The positions of the live cells of ranks `rank` (int64)."""
        if self.grid is None:
            return self.positions[rank].astype(np.int64)
        first, dims = self.grid
        out, rest = np.full(len(rank), first, np.int64), rank
        for count, step in reversed(dims):
            rest, digit = np.divmod(rest, count)
            out += digit * step
        return out


def _nth(parts: list[_LiveAt], weights: Sequence[int], k: np.ndarray) -> np.ndarray:
    """sum_j parts[j].at(i_j) * weights[j] at the k-th cells of the grid of the parts (C
    order, the last fastest), int64: the digits of each k, no table of the whole grid."""
    out, rest = np.zeros(len(k), np.int64), np.asarray(k, np.int64)
    for p, w in zip(reversed(parts), reversed(list(weights))):
        rest, digit = np.divmod(rest, len(p))
        out += p.at(digit) * int(w)
    return out


def _direct(op: ToView, offset: tuple[int, ...], src: np.ndarray, out: np.ndarray) -> bool:
    """`out[live cells of the view + offset] = the moved cells` without the moved buffer
    (the whole destination tensor's size for a tile); False when `_direct_form` has none."""
    if src.dtype != out.dtype or not out.flags.c_contiguous or not src.size:
        return False
    form = _direct_form(op.src.type, op.view, src.shape, src.strides, out.shape, out.strides)
    if form is None:
        return False
    return _put(out, offset, form, src[tuple(slice(i, None) for i in np.unravel_index(form[0], src.shape))])


def _put(out: np.ndarray, offset: tuple[int, ...], form: tuple, source: np.ndarray) -> bool:
    """The copy of a `_direct_form` from `source` (a view whose first element is the
    form's first source cell) into the view's live cells of `out` shifted by `offset`."""
    _, extents, src_steps, out_steps, out0 = form
    start = out0 + sum(o * st for o, st in zip(offset, out.strides))
    dst = as_strided(out.reshape(-1)[start // out.itemsize:], extents, out_steps)
    np.copyto(*wide_runs(dst, as_strided(source, extents, src_steps, writeable=False)))  # runs as words
    return True


def _direct_live(op: ToView, offset: tuple[int, ...], src: Compact, out: np.ndarray) -> bool:
    """`_direct` from a value holding its live rows only, when they are evenly spaced and
    the copy reads inside them (then the full buffer, padding rows zero, is not made): the
    form's steps on the full buffer read again on the live rows (`_live_steps`)."""
    base = src.base
    rows = layout.live_rows(src.t)
    if base.dtype != out.dtype or not out.flags.c_contiguous or not base.size or not base.flags.c_contiguous \
            or len(rows) == 0:
        return False
    even = layout.even_rows(src.t)
    if even is None:
        return False
    shape, item = src.shape, base.itemsize
    strides = tuple(int(math.prod(shape[k + 1:])) * item for k in range(len(shape)))
    form = _direct_form(op.src.type, op.view, shape, strides, out.shape, out.strides)
    if form is None:
        return False
    first, extents, src_steps = form[:3]
    row_bytes = base.nbytes // len(rows)
    if even.step == 1:  # one run of rows: the steps as they are, from the first live row
        start = first * item - int(rows[0]) * row_bytes
        lo, hi = _span(start, extents, src_steps)
        if lo < 0 or hi >= base.nbytes:
            return False
        return _put(out, offset, form, base.reshape(-1)[start // item:])
    found = _live_steps(first * item, extents, src_steps, row_bytes, even.start, even.step, len(rows))
    if found is None:
        return False
    start, steps = found
    return _put(out, offset, (form[0], extents, steps, *form[3:]), base.reshape(-1)[start // item:])


_COMPOSED: Lru = Lru(64)  # `_composed` by the op's types, the moves, and the buffers' shapes and strides


def _direct_pending(op: ToView, offset: tuple[int, ...], src: Pending, out: np.ndarray) -> bool:
    """`_direct_live` of a `Pending` (a tile's result committed, its moves not made yet): when
    those moves (`compact_moves.plan_of`) and the view's strided copy compose into one strided
    read of the pending rows, that one copy, and no `Compact` made first (issue 61: each of
    `drawn_s101_0`'s three result tiles was moved whole into its committed layout, then
    copied into the output). The composition is found once per layout (`_composed`); False
    when there is none."""
    base = src.base
    if base.dtype != out.dtype or not out.flags.c_contiguous or not base.size or not base.flags.c_contiguous:
        return False
    key = (op.src.type, op.view, src.chain, src.t, base.shape, base.dtype.str, out.shape, out.strides)
    found = _COMPOSED.get(key, MISSING)
    if found is MISSING:
        found = _COMPOSED.put(key, _composed(op, src, out.shape, out.strides))
    if found is None:
        return False
    form, start = found
    return _put(out, offset, form, base.reshape(-1)[start:])


def _composed(op: ToView, src: Pending, out_shape: tuple[int, ...], out_strides: tuple[int, ...]) -> tuple | None:
    """(`_direct_form` reading the pending rows, C-contiguous, with the moves composed in;
    the element of the rows it starts at) when every cell the copy reads is a live cell of a
    live row whose move reads a base cell, and those cells are one affine grid; else None."""
    t, base = src.t, src.base
    item, shape = base.itemsize, layout.shape_of(t)
    form = _direct_form(op.src.type, op.view, shape, tuple(math.prod(shape[k + 1:]) * item for k in range(len(shape))),
                        out_shape, out_strides)
    if form is None:
        return None
    first, extents, steps = form[0], form[1], tuple(st // item for st in form[2])
    row_len, row_step = math.prod(mp.size for mp in layout.local_levels(t)), base.strides[0] // item
    rank = np.full(layout.n_rows(t), -1, np.int64)
    rank[layout.live_rows(t)] = np.arange(len(layout.live_rows(t)))
    plan = compact_moves.plan_of(src)

    def read(k: np.ndarray) -> np.ndarray | None:  # the rows' elements the grid's k-th cells read
        cell = first + sum(d * st for d, st in zip(np.unravel_index(k, extents), steps))
        row, at = np.divmod(cell, row_len)
        if (rank[row] < 0).any() or (plan.live is not None and not plan.live[at].all()):
            return None
        return rank[row] * row_step + plan.index[at]

    found = affine_grid.grid_of(read, extents)  # every cell checked (as the Transpose Engine's read: engines)
    if found is None:
        return None
    start, strides = found
    return (form[0], extents, tuple(st * item for st in strides), *form[3:]), start


def _copy(into: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `into`, in the run's scratch when large (a whole destination
    tensor, copied before a tile is written into it: fresh memory would fault every page)."""
    out = arena.empty(into.shape, into.dtype)
    np.copyto(out, into)
    return out


@handles(ToView, options=True, donate=1, compact=True, lazy=True)  # moves not made yet: `_direct_pending`
def to_view(op: ToView, src: np.ndarray | Compact | Pending | LazyRows, into: np.ndarray, start: np.ndarray | None = None,
            options: CpuOptions = DEFAULT, owned: bool = False) -> np.ndarray:
    """A DMA of `src` into the view's type, written over `into` at the view's live cells
    (in place when the executor hands `into` over: `owned`, backends/cpu/executor.py);
    with fast moves, straight from `src` when the move is one strided copy (`_direct`;
    from its live rows when it holds those only, backends/cpu/compact.py). A view at a
    runtime `start` is shifted as a `window` is (RUNTIME-10 past its limit). A `Pending` source
    (moves not made yet) is copied straight from its rows when the moves and the copy compose
    into one strided read (`_direct_pending`), else made first, as every other operand is."""
    offset = _shifted(op, start, "a tile written at a runtime start")
    into = compact_moves.prepare(into, False, True)  # as the executor prepares a non-lazy handler's operands
    if isinstance(into, Compact):  # a destination of live rows only (a DM tensor): made whole, in
        whole = into.full()        # a buffer of this handler's own (then written in place)
        owned, into = not np.may_share_memory(whole, into.base), whole
    out = into if owned else _copy(into)
    if owned:  # written in place: a first write of memory not the arena's may fault its pages in
        arena.make_room(out, min(out.nbytes, math.prod(layout.shape_of(op.view)) * out.itemsize))
    if isinstance(src, Pending) and options.fast_moves and _direct_pending(op, offset, src, out):
        return out
    src = compact_moves.prepare(src, False, True)
    if isinstance(src, Compact):
        if options.fast_moves and _direct_live(op, offset, src, out):
            return out
        src = src.full()
    if options.fast_moves and _direct(op, offset, src, out):
        return out
    moved = moves.move_global(src, op.src.type, op.view, fast=options.fast_moves)
    _copy_cells(out, offset, moved, None, op.view)
    if not np.may_share_memory(moved, src):  # a scratch buffer of this handler alone: reusable now
        arena.give_back(moved)
    return out


@handles(Memset, donate=0)
def memset(op: Memset, into: np.ndarray, start: np.ndarray | None = None, owned: bool = False) -> np.ndarray:
    """The live cells of the view (moved by its runtime `start`, RUNTIME-10 past its limit)
    set to the fill value; every other cell kept (in place when the executor hands `into` over)."""
    out = into if owned else into.copy()
    bits = np.asarray(fill_pattern(op.value, op.view.dtype), op.view.dtype.bits_dtype)
    value = bits if op.view.dtype.is_float else bits.view(op.view.dtype.host_dtype)
    offset = _shifted(op, start, "a memset at a runtime start")
    _copy_cells(out, offset, np.broadcast_to(value, out.shape), None, op.view)
    return out
