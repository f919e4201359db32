"""The move of docs/machine/index.md by logical indices: DMA, fetch, collect, to_trf, cast, commit.

A move copies the same logical tensor into a new layout. Both sides are described by
their level mappings; every buffer position gets a *key*: the digits of its logical index
restricted to `frag(input)`, packed into one integer (mixed radix over the sorted
fragments). The output cell at position q takes the input cell with the same key; digits
outside `frag(input)` are not part of the key, so the value repeats along them
(broadcast); padding cells are zero. Tensor Unit stages key the per-slice levels only
and stay inside their (chip, cluster, slice) row; a DMA keys every level and matches
globally.

Keys are computed from the canonical factor form of the joint mapping `[L0, L1, ...]`
(docs/mapping-language.md), factor by factor, and combined as an outer sum over the factor grid,
so a table of millions of cells costs a few vectorized passes. This is deliberately not
the sequencer's read plan (`ir.mapping.sequence`), which the VISA interpreter follows:
the two executors must be independent.

Fast path (`fast=True`, `CpuOptions.fast_moves`; backends/cpu/moves_strided.py): when the plan's output -> input map is
affine over a grid of digits (a reshape, transpose, broadcast or regrouping; found from
the plan's logical indices and checked on every cell), the move is a strided copy, or a
read-only view of its input when the output is a reshape of that grid. A Tensor Unit move
then covers every spatial row, relying on padding rows holding zero (layout.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import numpy as np

from ir.errors import InternalError
from ir.mapping.nodes import Mapping
from ir.types import DmType, Type

from backends.cpu import arena, layout, lazy_rows, moves_strided, row_classes
from backends.cpu.keys import (  # re-exported: the keys are this module's matching
    KeySpace, RadixWhere, _looked_up, _outer, _parts, joint_frag, key_blocks, key_dtype, key_space, live_cells, logical_keys, logical_pad,
    looker, padding, radix_where,
)
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.lru import MISSING, Lru

__all__ = [
    "KeySpace", "MovePlan", "key_space", "logical_keys", "logical_pad", "move_plan",
    "match_keys", "match_factored", "plan_at", "move_global", "broadcast_copies", "move_local", "lazy_live_rows", "trim", "strided_form_of", "gather_rows",
]


@attrs.frozen
class MovePlan:
    """Output flat position -> input flat position (`index`: int64, or int32 for a move's
    plan whose input fits), and which outputs are live (`live`, None when all are)."""

    index: np.ndarray
    live: np.ndarray | None


_WHERE_BLOCK = 1 << 16  # source positions keyed at once by `_where`


def _where(space: KeySpace, src_levels: tuple[Mapping, ...], narrow: bool) -> np.ndarray | RadixWhere:
    """Key -> a source position holding it (-1: none; several hold the same value, the
    last in flat order is named), int32 when `narrow` and every source position fits; as
    arithmetic (`keys.RadixWhere`) when the source holds every key once, digit for digit. The
    source's keys are made a block at a time (`key_blocks`): a DM tensor's source of every
    slice, padding slices included, is never keyed at once."""
    parts, dtype = _parts(src_levels, space), key_dtype(space)
    n = math.prod(mp.size for mp in src_levels)
    wide = not narrow or n > np.iinfo(np.int32).max
    found = None if parts is None else radix_where(parts, space.size, np.int64 if wide else np.int32)
    if found is not None:  # every key once, digit for digit: the positions by arithmetic, no table
        return found
    where = np.full(space.size, -1, np.int64 if wide else np.int32)
    if parts is None:
        blocks = iter([(0, *logical_keys(src_levels, space))])
    else:
        blocks = key_blocks(parts, dtype, _WHERE_BLOCK)
    for lo, keys, pad in blocks:
        live = np.flatnonzero(~pad)
        keys = keys[live]
        live += lo
        where[keys] = live  # in flat order: a later source of a key overwrites
        del keys, pad, live  # before the next block is made
    return where


def _check_found(index: np.ndarray, live: np.ndarray, what: str, src_levels: tuple[Mapping, ...],
                 dst_levels: tuple[Mapping, ...]) -> None:
    missing = int(np.count_nonzero((index < 0) & live))
    if missing:
        raise InternalError(f"cpu {what}: {missing} live output cells have no input cell "
                            f"({_levels_text(src_levels)} -> {_levels_text(dst_levels)})")


def match_keys(space: KeySpace, src_levels: tuple[Mapping, ...],
               dst_levels: tuple[Mapping, ...], what: str, narrow: bool = False) -> MovePlan:
    """For every cell of `dst_levels`, a cell of `src_levels` with the same key. Made with
    as little scratch as a first run can afford (issue 38): the source's keys are dropped
    once `where` holds them, the destination's are made a block at a time and read through
    `where` at once, and the padding is zeroed in place. `narrow`: the index is int32 when every source position fits
    (a move plan, only ever used to index; the contraction's plan stays int64)."""
    where = _where(space, src_levels, narrow)
    index, dst_pad = _looked_up(dst_levels, space, where)
    del where
    live = ~dst_pad
    del dst_pad
    _check_found(index, live, what, src_levels, dst_levels)
    if live.all():
        return MovePlan(index, None)
    index[~live] = 0
    return MovePlan(index, live)


def match_factored(space: KeySpace, src_levels: tuple[Mapping, ...], dst_levels: tuple[Mapping, ...],
                   what: str) -> MovePlan:
    """`match_keys` (narrow) with one axis per digit of the destination's joint factor form
    (C order over them is its flat order): `index` and `live` are read-only broadcast views
    holding one value along every digit that neither the key nor the padding depends on,
    so a table whose key ignores most of its digits (a contraction's TRF index, repeated
    over the stream's time loops) costs the cells it does depend on (issue 61, first-run
    memory). One axis of every cell when the factor form is past the table limit."""
    parts = _parts(dst_levels, space)
    if parts is None:
        return match_keys(space, src_levels, dst_levels, what, narrow=True)
    shape = tuple(len(k) for k, _ in parts)
    used = [bool(k.any()) or (p is not None and bool(p.any())) for k, p in parts]
    small = [(k, p) if u else (k[:1], None) for (k, p), u in zip(parts, used)]
    where = _where(space, src_levels, narrow=True)
    keys, pad = _outer(small, key_dtype(space))
    index = where[keys]
    del where, keys
    live = ~pad
    _check_found(index, live, what, src_levels, dst_levels)
    index[pad] = 0
    cut = tuple(n if u else 1 for n, u in zip(shape, used))
    index = np.broadcast_to(index.reshape(cut), shape)
    return MovePlan(index, None if live.all() else np.broadcast_to(live.reshape(cut), shape))


def plan_at(src_levels: tuple[Mapping, ...], dst_levels: tuple[Mapping, ...],
            flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The move plan at the destination's flat positions `flat` only: (the source position
    of each, whether it is live), without the index of every destination position (a
    tile's write into a whole output view)."""
    return planner(src_levels, dst_levels)(flat)


def planner(src_levels: tuple[Mapping, ...],
            dst_levels: tuple[Mapping, ...]) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """`plan_at` as a function of the positions, the source's key table made once: asked
    a block of positions at a time, no array of every destination position is made."""
    space = key_space(joint_frag(src_levels))
    where = _where(space, src_levels, narrow=True)
    looked = looker(dst_levels, space, where)

    def at(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        index, pad = looked(flat)
        _check_found(index, ~pad, "move", src_levels, dst_levels)
        return index, ~pad
    return at


def _levels_text(levels: tuple[Mapping, ...]) -> str:
    return "[" + "; ".join(str(mp) for mp in levels) + "]"


_PLANS = Lru(256 << 20, lambda plan: plan.index.nbytes + (0 if plan.live is None else plan.live.nbytes))
"""Least-recently-used move plans, bounded by the bytes of their index arrays (a DMA
plan of a large tensor is tens of MiB; re-running a kernel should not rebuild it)."""


def move_plan(src_levels: tuple[Mapping, ...], dst_levels: tuple[Mapping, ...]) -> MovePlan:
    """The move of docs/machine/index.md from `src_levels` to `dst_levels`, keyed on frag(src)."""
    plan = _PLANS.get((src_levels, dst_levels))
    return plan if plan is not None else _PLANS.put((src_levels, dst_levels), _uncached_plan(src_levels, dst_levels))


def gather_rows(rows: np.ndarray, plan: MovePlan) -> np.ndarray:
    """The move of `plan` on every row of `rows` (rows, *local) by gather: (rows, cells)."""
    return _apply(rows.reshape(len(rows), -1), plan)


def _apply(flat: np.ndarray, plan: MovePlan) -> np.ndarray:
    """Gather along the last axis; padding positions get the zero bit pattern."""
    out = flat[..., plan.index]
    if plan.live is not None:
        out = np.where(plan.live, out, np.zeros((), out.dtype))
    return out


def move_global(buf: np.ndarray, src: Type, dst: Type, fast: bool = True,
                copies: bool = False, threads: int = 1) -> np.ndarray | LazyRows:
    """A DMA: match over every level of both types (docs/machine/dma.md); `fast` allows the
    strided form (False: the index gather, the reference). `copies` allows a result that
    holds the distinct rows of a broadcast only (backends/cpu/row_classes.py `dma_copies`); `threads` may
    share a large copy."""
    src_levels = (*layout.spatial_levels(src), *layout.local_levels(src))
    dst_levels = (*layout.spatial_levels(dst), *layout.local_levels(dst))
    n_spatial = layout.n_rows(dst)
    found = broadcast_copies(buf, src, dst) if fast and copies else None
    if found is not None:
        return found
    out = _strided_move(buf.reshape(1, *buf.shape), src_levels, dst_levels, None, classes_rows=n_spatial,
                        threads=threads) if fast else None
    if out is not None:
        return out.reshape(layout.shape_of(dst))
    plan = move_plan(src_levels, dst_levels)
    return _apply(buf.reshape(-1), plan).reshape(layout.shape_of(dst))


def broadcast_copies(buf: np.ndarray, src: Type, dst: Type) -> LazyRows | None:
    """A DMA that broadcasts (copies the same cells to several slices) held as its distinct
    rows (backends/cpu/row_classes.py `dma_copies`); None when it is not one."""
    src_levels = (*layout.spatial_levels(src), *layout.local_levels(src))
    dst_levels = (*layout.spatial_levels(dst), *layout.local_levels(dst))
    rows = buf.reshape(1, *buf.shape)
    form = strided_form_of(rows, src_levels, dst_levels)
    return None if form is None else row_classes.dma_copies(rows, form, layout.n_rows(dst), layout.shape_of(dst))


def move_local(buf: np.ndarray | LazyRows, src: Type, dst: Type, fast: bool = True,
               lazy: bool = False) -> np.ndarray | LazyRows:
    """A Tensor Unit move: per (chip, cluster, slice) row, from the input's per-slice levels
    to the output's, keyed on frag(input per-slice levels); `fast` allows
    the strided form (False: the index gather, the reference). `lazy` allows a
    `LazyRows` result (backends/cpu/lazy_rows.py) where the strided form would copy; `buf`
    may be one."""
    src_local = layout.local_levels(src)
    same_rows = layout.spatial_levels(src) == layout.spatial_levels(dst)
    if isinstance(buf, LazyRows):
        out = _lazy_move(buf, src_local, dst, lazy) if fast and same_rows else None
        if out is not None:
            return out
        buf = lazy_rows.materialize(buf)
    if fast and same_rows:
        n_rows = layout.n_rows(src)
        src_shape = (n_rows, *(mp.size for mp in src_local))
        try:
            rows = np.reshape(buf, src_shape, copy=False)
        except ValueError:
            rows = None
        if rows is not None:
            even = moves_strided.even_rows(layout.live_rows(src), n_rows, layout.even_rows(src))
            out = _strided_move(rows, src_local, layout.local_levels(dst), even,
                                layout.shape_of(dst) if lazy else None)
            if isinstance(out, LazyRows):
                return out
            if out is not None:
                return out.reshape(layout.shape_of(dst))
    plan = move_plan(src_local, layout.local_levels(dst))
    rows = layout.rows_view(buf, src)
    out = _apply(rows.reshape(len(rows), -1), plan)
    n_local = tuple(mp.size for mp in layout.local_levels(dst))
    return layout.from_rows(out.reshape(len(rows), *n_local), dst)


def _uncached_plan(src_levels: tuple[Mapping, ...], dst_levels: tuple[Mapping, ...]) -> MovePlan:
    """The move plan, made (its callers have found no cached one and cache it)."""
    return match_keys(key_space(joint_frag(src_levels)), src_levels, dst_levels, "move", narrow=True)


def _plan_source(src_levels: tuple[Mapping, ...], dst_levels: tuple[Mapping, ...]):
    """The move plan as `lazy_rows.compose_form` asks it: (`source(positions)`, the input
    position each output position reads; the output's size; its live mask, None when every
    cell is live). The cached plan's index when the gather made one; otherwise the source's
    key table and the output's keys a block of positions at a time (`_source`): no index of
    every output cell (issue 61, first-run memory)."""
    plan = _PLANS.get((src_levels, dst_levels))
    if plan is not None:
        return plan.index.__getitem__, len(plan.index), plan.live
    space = key_space(joint_frag(src_levels))
    pad = padding(dst_levels, space)
    return _source(src_levels, dst_levels, space, _where(space, src_levels, narrow=True)), len(pad), \
        (~pad if pad.any() else None)


def _source(src_levels: tuple[Mapping, ...], dst_levels: tuple[Mapping, ...], space: KeySpace,
            where: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The input position each of the output positions `flat` reads (live ones only)."""
    at = looker(dst_levels, space, where)

    def source(flat: np.ndarray) -> np.ndarray:
        index, _ = at(flat)
        _check_found(index, np.ones(len(index), bool), "move", src_levels, dst_levels)
        return index
    return source


def strided_form_of(rows: np.ndarray, src_levels: tuple[Mapping, ...], dst_levels: tuple[Mapping, ...],
                    plan: MovePlan | None = None, key: tuple | None = None) -> moves_strided.StridedForm | None:
    """The strided form of the move of `rows` (n_rows, *src level sizes; any strides), or
    None when it has none; cached by `key` (default: the levels), shape and strides.
    `plan`: the move's plan when it is not the levels' own (a composed move)."""
    key = (key or (src_levels, dst_levels), rows.shape[1:], rows.strides[1:], rows.dtype.itemsize)
    form = moves_strided.FORMS.get(key, MISSING)
    if form is not MISSING:
        return form
    own = plan is None
    plan = plan or _PLANS.get((src_levels, dst_levels))
    if plan is not None:
        form = moves_strided.strided_form(plan.index.__getitem__, len(plan.index), plan.live, rows.shape[1:],
                                          rows.strides[1:])
    else:  # the levels' own plan, asked a block of positions at a time: no index of the whole output
        space = key_space(joint_frag(src_levels))
        where = _where(space, src_levels, narrow=True)
        cells = live_cells(dst_levels, space, moves_strided.check_block)  # its runs as the checks ask them

        def held(keys: np.ndarray) -> np.ndarray:
            index = where[keys]
            _check_found(index, np.ones(len(index), bool), "move", src_levels, dst_levels)
            return index

        if cells is not None:   # the live cells as a grid of digits: runs of them without a division per cell
            form = moves_strided.strided_form_cells(cells, held, math.prod(mp.size for mp in dst_levels),
                                                    rows.shape[1:], rows.strides[1:])
        else:
            pad = padding(dst_levels, space)
            form = moves_strided.strided_form(_source(src_levels, dst_levels, space, where), len(pad),
                                              ~pad if pad.any() else None, rows.shape[1:], rows.strides[1:])
        del where
    moves_strided.FORMS.put(key, form)
    if form is None and own:  # the gather of moves.py needs the plan: made once, kept
        _PLANS.put((src_levels, dst_levels), plan or _uncached_plan(src_levels, dst_levels))
    return form


def _strided_move(rows: np.ndarray, src_levels: tuple[Mapping, ...],
                  dst_levels: tuple[Mapping, ...], even: tuple[int, int, int] | None,
                  lazy_shape: tuple[int, ...] | None = None,
                  classes_rows: int | None = None, threads: int = 1) -> np.ndarray | LazyRows | None:
    """The move as (n_rows, n_dst) by its strided form, or None when it has none.
    `rows` (n_rows, *src level sizes) holds zero in its padding rows. With `lazy_shape`
    (the output buffer's shape), a move that would copy every cell of every row is
    returned as a `LazyRows` instead. With `classes_rows` (a DMA: one row in, the
    result's spatial rows out), the copies among those rows are recorded (row_classes)."""
    form = strided_form_of(rows, src_levels, dst_levels)
    if form is None:
        return None
    n_dst = math.prod(mp.size for mp in dst_levels)
    if lazy_shape is not None and moves_strided.as_view(rows, form, n_dst) is None:
        out = lazy_rows.lazy_or_copy(rows, form, n_dst, lazy_shape)
        if out is not None:
            return out
    out = moves_strided.apply_form(rows, form, n_dst, even, threads)
    if classes_rows is not None:
        row_classes.record(out, form, classes_rows)
    return out


def _lazy_move(buf: LazyRows, src_local: tuple[Mapping, ...], dst: Type, lazy: bool) -> np.ndarray | LazyRows | None:
    """A Tensor Unit move of a `LazyRows` composed with its form, reading the lazy
    buffer's base (its padding rows hold zero); None when the composition is not affine.
    Distinct rows (`row_of`) moved into DM (a commit) are written out, the map kept: a
    stream's form composed through a commit reads its rows in the stream's order, which
    the fetches after it may read in no strided order (a transposed stream, issue 61: the
    contraction then gathered the stream by index and copied its 16-fold replay of every
    distinct row out), while they read the DM tensor's layout as a DMA's copies."""
    dst_local = layout.local_levels(dst)
    form = lazy_rows.compose_form(lambda: _plan_source(src_local, dst_local), buf, (src_local, dst_local))
    if form is None:
        return None
    n_dst = math.prod(mp.size for mp in dst_local)
    written = buf.row_of is not None and isinstance(dst, DmType)
    if lazy and form.full and not written:
        return LazyRows(buf.base, form, n_dst, layout.shape_of(dst), buf.row_of)
    rows = (0, 1, buf.base.shape[0])
    if buf.row_of is None and buf.base.shape[0] == layout.n_rows(dst):  # the live rows moved, the others zero
        rows = moves_strided.even_rows(layout.live_rows(dst), buf.base.shape[0], layout.even_rows(dst))
    out = moves_strided.apply_form(buf.base, form, n_dst, rows)
    if buf.row_of is not None and lazy:  # the distinct rows moved, the map kept
        out = np.ascontiguousarray(out)
        return LazyRows(out, row_classes.identity(n_dst, out.itemsize), n_dst, layout.shape_of(dst), buf.row_of)
    return (out if buf.row_of is None else out[buf.row_of]).reshape(layout.shape_of(dst))


def lazy_live_rows(buf: LazyRows, src: Type, dst: Type) -> np.ndarray | None:
    """The Tensor Unit move of the live rows of `buf` (every spatial row, no `row_of`), as
    (live rows, cells), composed with its form; None when the composition is not affine."""
    if buf.row_of is not None or buf.base.shape[0] != layout.n_rows(src):
        return None
    src_local, dst_local = layout.local_levels(src), layout.local_levels(dst)
    form = lazy_rows.compose_form(lambda: _plan_source(src_local, dst_local), buf, (src_local, dst_local))
    if form is None:
        return None
    even = layout.even_rows(src)
    rows = buf.base[even if even is not None else layout.live_rows(src)]
    return moves_strided.apply_form(rows, form, math.prod(mp.size for mp in dst_local), None)


def trim(buf: np.ndarray, size: int) -> np.ndarray:
    """commit_trim (docs/machine/commit.md): keep the leading `size` cells of every packet.
    Into the run's arena when large (backends/cpu/arena.py): after a contraction its free
    scratch is resident already, where fresh memory beside it raised a first run's peak
    (issue 61: drawn_s1_3, 1.1 MiB with 3 MiB of the arena's buffers free)."""
    kept = buf[..., :size]
    out = arena.empty(kept.shape, kept.dtype)
    np.copyto(out, kept)
    return out
