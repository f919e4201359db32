"""The data-movement engines on cpu buffers: each handler reshapes the stream buffer
`(chip, cluster, slice, time, packet)` into the `x[slice, time, packet]` arrays of
`ir.switch.semantics` and calls it, so cpu and the VISA interpreter share one definition."""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ir.data_movement_ops import Switch, Transpose
from ir.switch.semantics import switch_data, transpose_data, turned_tiles
from ir.transpose.params import TransposeParams

from backends.cpu import affine_grid, arena, compact as compact_lib, compact_moves, keys, layout, lazy_rows, switch_rows
from backends.cpu.handlers import handles
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.lru import MISSING, ByObject, Lru
from backends.cpu.moves import MovePlan
from backends.cpu.moves_strided import StridedForm
from backends.cpu.row_classes import identity

__all__ = ["transpose", "switch"]

_PARAMS: ByObject[TransposeParams] = ByObject()  # a kept trace runs its ops again


@handles(Transpose, lazy=True, compact=True, makes_compact=True, gathers=True)  # new rows: its consumers'
# forms do not reach back through it
def transpose(op: Transpose, buf, compact: bool = False):
    """Transpose Engine, slice by slice, on the rows that differ only (padding rows stay
    zero, as every cpu buffer's). A padding slice's stream is zeros and so is its transpose,
    and slices holding copies of one row (a DMA's broadcast, `row_classes.dma_copies`) have
    equal transposes: the engine transposes the distinct live rows once each and gives a
    `LazyRows` whose `row_of` names each spatial row's (the commit and fetches after it keep
    the map, the contraction widens and multiplies those rows only); with `compact` (no
    contraction or TRF load reads it) a `Compact` of the live rows. Issue 61: the k-first
    drawn kernels transposed, and then widened, 16 copies of every row of the operand. A
    result packet whose padding cells follow its live ones is held without them (`_trimmed`)."""
    t, out_t = op.input.type, op.result.type
    params = _PARAMS.get(op) or _PARAMS.put(op, op.params())  # the engine's rules run once per op
    if layout.spatial_levels(t) != layout.spatial_levels(out_t):  # not slice for slice: every position
        x = compact_moves.materialize(buf).reshape(-1, t.time.size, t.packet.size)
        return transpose_data(x, params, op.out_time.size).reshape(layout.shape_of(out_t))
    kept = _kept_cells(out_t)
    if kept is not None and kept <= params.in_rows and isinstance(buf, compact_moves.Pending) \
            and not (compact and compact_lib.wanted(out_t)):
        found = _pending_read(buf, t, params.valid_size_per_packet)
        if found is not None:  # the turned cells read from the pending rows: no padded rows made first
            return _trimmed(found, *_live_of(t), params, op.out_time.size, out_t, kept)
    rows, row_of, zero_row = _distinct_rows(buf, t)
    x = rows.reshape(rows.shape[0], t.time.size, t.packet.size)
    n_cells = op.out_time.size * out_t.packet.size
    as_compact = row_of is not None and compact and compact_lib.wanted(out_t)  # a `Compact` of the live rows
    kept = None if as_compact else kept
    if kept is not None:  # the packet's padding held as none (a contraction reading it copies it out)
        found = _trimmed(x, zero_row, row_of, params, op.out_time.size, out_t, kept)
        _give_back_copy(rows, buf)
        return found
    out = arena.empty((len(x) + zero_row, n_cells), x.dtype)  # the run's scratch: no fresh pages each run
    transpose_data(x, params, op.out_time.size, out=out[:len(x)])
    _give_back_copy(rows, buf)
    out[len(x):] = 0  # the padding rows' (zero) row
    if row_of is None:  # every spatial row live, each its own
        return out.reshape(layout.shape_of(out_t))
    if as_compact:
        return compact_lib.make(out[row_of[layout.live_rows(t)]], out_t)
    return LazyRows(out, identity(n_cells, out.itemsize), n_cells, layout.shape_of(out_t), row_of)


_TRIM_BLOCK = 1 << 18  # bytes of padded rows the engine turns at a time before their padding is cut


@functools.lru_cache(maxsize=256)
def _kept_cells(out_t) -> int | None:
    """The live cells of every packet of the Transpose Engine's result type when they are its
    first ones and fewer than all (`K % 4 # 16`: 4), else None."""
    pad = keys.logical_pad((out_t.packet,))
    live = keys.live_prefix(pad)
    return live if 0 < live < len(pad) else None


def _trimmed(x: np.ndarray, zero_row: bool, row_of: np.ndarray | None, params: TransposeParams, out_time: int,
             out_t, kept: int) -> LazyRows:
    """The Transpose Engine's result of the rows `x` (then a zero row for the padding rows
    when `zero_row`; each spatial row's by `row_of`, or every row its own) as a `LazyRows`
    holding the first `kept` cells of every packet only (its padding cells read zero)
    (issue 61, first-run memory: the turned stream of a `k`-first bf16 operand was held with
    12 padding cells of every 16, 4.25 MiB of a 3.25 MiB kernel's 25 MiB). When the kept
    cells are cells the engine writes (`kept <= in_rows`) they are copied straight from the
    turned tiles (`transpose_cells`' view), column by column; else turned a block of rows at
    a time into a padded scratch, then cut (issue 61: the scratch's fill and cut were 2 of
    `drawn_s101_2`'s 3 passes over its turned operand)."""
    n_rows, packet, item = len(x), out_t.packet.size, x.itemsize
    # not the arena's: once the commit has copied it, its memory goes back to the allocator (kept by the
    # arena, a 1 MiB base sat idle beside drawn_s1_3's 4 MiB contraction products)
    base = np.empty((n_rows + zero_row, out_time * kept), x.dtype)
    base[n_rows:] = 0
    if kept <= params.in_rows:
        tiles = turned_tiles(x, params)  # [rows, tile, out_rows, in_rows], a view of `x`
        cells = base[:n_rows].reshape(tiles.shape[:3] + (kept,))
        for j in range(kept):  # runs read in order (`transpose_data`'s column copies)
            cells[..., j] = tiles[..., j]
    else:
        step = max(1, _TRIM_BLOCK // max(1, out_time * packet * item))
        scratch = arena.empty((min(step, n_rows), out_time * packet), x.dtype)  # no fresh pages each run
        for lo in range(0, n_rows, step):
            part = scratch[:min(step, n_rows - lo)]
            transpose_data(x[lo:lo + len(part)], params, out_time, out=part)
            base[lo:lo + len(part)].reshape(len(part), out_time, kept)[...] = \
                part.reshape(len(part), out_time, packet)[:, :, :kept]
        arena.give_back(scratch)  # the run's next request takes it
    form = StridedForm((out_time, kept), (packet, 1), (kept * item, item), 0, 0, False)
    return LazyRows(base, form, out_time * packet, layout.shape_of(out_t), row_of)


_READS: Lru = Lru(64)  # `_pending_grid` by the moves, the type, the cells read and the rows' shape


def _pending_read(buf: compact_moves.Pending, t, valid: int) -> np.ndarray | None:
    """The first `valid` cells of every packet of a `Pending` input of type `t`, (live rows,
    time, valid), as a read-only view of its pending rows when its moves
    (`compact_moves.plan_of`) put those cells on one strided grid of live cells (found once
    per layout: `_pending_grid`); None otherwise. Issue 61: the turned `a` of `drawn_s101_0`
    was made as every packet's 16 cells (8 of them padding, zeroed each run) only for the
    engine to read 8 and keep 4 of them."""
    base = buf.base
    if not base.flags.c_contiguous or base.ndim < 2:
        return None
    key = (buf.chain, t, valid, base.shape[1:], base.dtype.str)
    found = _READS.get(key, MISSING)
    if found is MISSING:
        found = _READS.put(key, _pending_grid(compact_moves.plan_of(buf), t.time.size, t.packet.size, valid,
                                              math.prod(base.shape[1:])))
    if found is None:
        return None
    first, (step_t, step_c) = found
    flat = base.reshape(base.shape[0], -1)
    return as_strided(flat[:, first:], (flat.shape[0], t.time.size, valid),
                      (flat.strides[0], step_t * flat.itemsize, step_c * flat.itemsize), writeable=False)


def _pending_grid(plan: MovePlan, time: int, packet: int, valid: int, row_len: int) -> tuple[int, tuple[int, int]] | None:
    """(the row element of cell (0, 0), the element steps along time and along the packet)
    when cell (s, c) of every packet's first `valid` cells reads live row element
    first + s * step_t + c * step_c under the moves' `plan`, every one inside the row
    (`affine_grid.grid_of`, as a tile's composed DMA is found: `views._composed`)."""
    if len(plan.index) != time * packet or not 0 < valid <= packet:
        return None

    def read(k: np.ndarray) -> np.ndarray | None:  # the row elements the (s, c) cells of ranks k read
        at = (k // valid) * packet + k % valid
        if plan.live is not None and not plan.live[at].all():
            return None
        return plan.index[at].astype(np.int64)

    found = affine_grid.grid_of(read, (time, valid))
    if found is None:
        return None
    first, (step_t, step_c) = found
    if step_t < 0 or step_c < 0 or first + (time - 1) * step_t + (valid - 1) * step_c >= row_len:
        return None
    return first, (step_t, step_c)


def _live_of(t) -> tuple[bool, np.ndarray | None]:
    """(whether a zero row follows the live rows, each spatial row's row or None) of a value
    of `t` held as its live rows (`_distinct_rows` of a `Pending` or a `Compact`)."""
    if len(layout.live_rows(t)) == layout.n_rows(t):
        return False, None
    return True, _live_map(layout.spatial_levels(t))


def _give_back_copy(rows: np.ndarray, buf) -> None:
    """`rows`, the engine's input rows once turned, back to the arena when `_distinct_rows`
    copied them out of a `LazyRows` `buf` (memory no other value holds): the run's next
    requests take them, or their pages are dropped before fresh memory is taken (issue 61,
    first-run memory: drawn_s2_3's 2.25 MiB of copied rows sat beside its contraction)."""
    if isinstance(buf, LazyRows) and arena.memory_owner(rows) is not arena.memory_owner(buf.base):
        arena.give_back(rows)


def _distinct_rows(buf, t) -> tuple[np.ndarray, np.ndarray | None, bool]:
    """(the rows to transpose (rows, cells), the row each spatial row holds or None when every
    spatial row is a live row of its own, whether the padding rows need a zero row after
    them) of a Transpose Engine input `buf` of type `t`: a broadcast's distinct rows (its
    padding row among them), else the live rows."""
    if isinstance(buf, LazyRows) and buf.row_of is not None:
        return lazy_rows.materialize(buf.distinct()), buf.row_of, False
    total, live = layout.n_rows(t), layout.live_rows(t)
    if isinstance(buf, LazyRows):
        even = layout.even_rows(t)
        rows = lazy_rows.materialize(buf if len(live) == total else buf.rows(even if even is not None else live))
    elif isinstance(buf, (compact_moves.Pending, compact_lib.Compact)):
        rows = compact_moves.realize(buf).base if isinstance(buf, compact_moves.Pending) else buf.base
    else:
        rows = layout.rows_view(buf, t)
    return rows.reshape(rows.shape[0], -1), *_live_of(t)[::-1]


@functools.lru_cache(maxsize=64)
def _live_map(levels: tuple) -> np.ndarray:
    """Each spatial row's live row (its rank among the live rows), the padding rows the row
    after the last live one (a zero row)."""
    live = layout._live_rows(levels)
    out = np.full(math.prod(mp.size for mp in levels), len(live), np.intp)
    out[live] = np.arange(len(live))
    out.setflags(write=False)
    return out


@handles(Switch, lazy=True, compact=True, gathers=True)  # a broadcast gathers from a fetch not made yet
def switch(op: Switch, buf) -> np.ndarray | LazyRows:
    """Switch Engine, on each (chip, cluster)'s ring of slices. Padding positions of the
    output (a tile the engine may write over `#` don't-care) are zeroed, as in every buffer.
    A broadcast is held as its distinct rows (backends/cpu/switch_rows.py), gathered from
    its input's moves not made yet when they carry whole packets."""
    if not isinstance(buf, (np.ndarray, compact_moves.Pending)):
        buf = compact_moves.materialize(buf)
    copies = switch_rows.distinct(op, buf)
    if copies is not None:
        return copies
    buf = compact_moves.materialize(buf)
    t, out_t = op.input.type, op.result.type
    rings = buf.reshape(-1, t.slice.size, t.time.size, t.packet.size)
    out = None  # each ring written into the result as it comes (a stack of a list held the result twice)
    for k, ring in enumerate(rings):
        moved = switch_data(ring, t.slice, t.time, op.out_slice, op.out_time, op.config)
        if out is None:
            out = np.empty((len(rings), *moved.shape), moved.dtype)
        out[k] = moved
        del moved
    return layout.zero_padding_in_place(out.reshape(layout.shape_of(out_t)), out_t)  # `out` is this handler's own
