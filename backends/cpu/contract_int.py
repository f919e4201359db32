"""The integer whole contraction (`acc = i32`) of backends/cpu/contract_fast.py.

The order of an integer sum does not matter, so `Y = A @ W^T` is a float BLAS matmul over
the reduced digits, exact because every partial sum is an integer below 2^24 (float32) or
2^53 (float64) in magnitude (bounded by the dtypes), then wrapped to i32. Spatial rows
holding copies of the same operands (a DMA broadcast) share one matmul of the distinct
rows (`_row_split`, `_folded`); a large one is cut by its outer rows among the backend's
threads, each running BLAS on one thread (the caller limits the pool) and casting its part
straight into the result cells (`_dest_view`), which the parts never share.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ir.dtypes import DType

from backends.cpu import arena, row_classes
from backends.cpu.contract_plan import Plan, _dest_view
from backends.cpu.thread_pool import share

__all__ = ["contract_int"]

INT_CHUNK = 1 << 18
"""Operand elements converted to float per integer matmul block (spatial rows)."""
PARALLEL_MIN = 1 << 22
"""Multiply-adds of a folded integer matmul from which its outer rows are shared among
`CpuOptions.threads` threads (each running BLAS on one thread)."""
PIECES = 4
"""Parts of a shared folded matmul per thread."""
BLOCK_BYTES = arena.MIN_BYTES
"""The most bytes of float products a folded matmul computes at a time (`_blocks`): a block
is still one arena buffer, which the next run takes again."""


def _int_bound(dtype: DType) -> int:
    return max(abs(dtype.min), abs(dtype.max))


def _int_ftype(outer, plan: Plan):
    """The float type whose matmul is exact for this contraction, None when neither is."""
    bound = plan.terms * _int_bound(outer.stream_dtype) * _int_bound(outer.trf_dtype)
    if bound < 1 << 24:
        return np.float32
    if bound < 1 << 53:
        return np.float64
    return None


def _constant_along(src: np.ndarray, outer: int, inner: int, axis: int) -> bool:
    """True when `src` (rows, ...), its rows read as an outer x inner grid, holds the same
    values all along `axis` of that grid (0 outer, 1 inner); one far pair is compared
    first, which rejects most splits at once."""
    v = src.reshape(outer, inner, *src.shape[1:])
    if axis == 1:
        return bool(np.array_equal(v[0, -1], v[0, 0]) and (v[:, 1:] == v[:, :1]).all())
    return bool(np.array_equal(v[-1, 0], v[0, 0]) and (v[1:] == v[:1]).all())


def _row_split(a_src: np.ndarray, w_src: np.ndarray) -> tuple[int, int, bool] | None:
    """(outer, inner, stream_outer): a split of the spatial rows into an outer x inner grid
    along which the stream's values vary with one factor only and the TRF's with the other
    (slices holding copies of the same data, as a DMA broadcast makes them); then the
    contraction of every row is one matmul of the distinct operands. None when no split
    of two factors fits."""
    rows = a_src.shape[0]
    for inner in range(rows // 2, 1, -1):
        if rows % inner:
            continue
        outer = rows // inner
        if _constant_along(a_src, outer, inner, 1) and _constant_along(w_src, outer, inner, 0):
            return outer, inner, True
        if _constant_along(a_src, outer, inner, 0) and _constant_along(w_src, outer, inner, 1):
            return outer, inner, False
    return None


class Rows(NamedTuple):
    """An operand's cells (stored rows, *layout shape): every spatial row's, or (`row_of`,
    one stored row per spatial row: a DMA's copies, backends/cpu/row_classes.py `dma_copies`) the
    distinct rows' only."""

    cells: np.ndarray
    row_of: np.ndarray | None = None

    def full(self) -> np.ndarray:
        """The cells of every spatial row (a copy when `row_of` maps them)."""
        return self.cells if self.row_of is None else self.cells[self.row_of]

    def proxy(self) -> np.ndarray | None:
        """(rows, 1) values equal where the rows are equal (`row_of`), or None."""
        return None if self.row_of is None else self.row_of[:, None]

    def pick(self, outer: int, inner: int, along_outer: bool, part: slice = slice(None)) -> np.ndarray:
        """The spatial rows read as an outer x inner grid at inner 0 (`along_outer`: one
        per outer position, of the positions `part` only) or at outer 0 (one per inner
        position)."""
        if self.row_of is None:
            v = self.cells.reshape(outer, inner, *self.cells.shape[1:])
            return v[part, 0] if along_outer else v[0]
        idx = (np.arange(outer) * inner)[part] if along_outer else np.arange(inner)
        return self.cells[self.row_of[idx]]


def _row_proxy(op, src: Rows) -> np.ndarray:
    """Rows (rows, ...) whose equality implies the operand's rows' equality: the map of a
    DMA's copies (`Rows.row_of`), else the row classes its DMA recorded (backends/cpu/
    row_classes.py), else its stored words."""
    found = src.proxy()
    if found is None:
        classes = row_classes.classes_of(op.stored())
        found = classes[:, None] if classes is not None else op.words()
    return found


def _int_operand(src: np.ndarray, ftype, live: np.ndarray | None, groups: tuple[int, ...]) -> np.ndarray:
    """(count, N', side, R) in `ftype`, multiplied by `live` when given."""
    out = np.asarray(src, ftype).reshape(src.shape[0], *groups)
    if live is not None:
        out *= live
    return out


def _distinct(a_src: Rows, w_src: Rows, split: tuple[int, int, bool], along_outer: bool,
              part: slice = slice(None)) -> np.ndarray:
    """The distinct rows under `split` of the operand varying with the outer factor
    (`along_outer`; at the outer positions `part` only) or of the one varying with the
    inner: only the rows asked for are gathered (a part's matmul does not copy the
    other parts' rows, nor the inner rows a caller converted once: issue 61, first-run memory)."""
    outer, inner, stream_outer = split
    return (a_src if stream_outer == along_outer else w_src).pick(outer, inner, along_outer, part)


def _float_rows(src: np.ndarray, plan: Plan, ftype, side: str) -> np.ndarray:
    """Distinct rows of operand `side` ("a" or "w") as (count, N', side, R) in `ftype`."""
    live = None if plan.live is None or plan.live_on != side else plan.live.astype(ftype)
    return _int_operand(src, ftype, live, (plan.a if side == "a" else plan.w).groups)


def _folded(a_src: Rows, w_src: Rows, plan: Plan, ftype, split: tuple[int, int, bool],
            part: slice = slice(None), inner: np.ndarray | None = None, scratch: bool = False) -> np.ndarray:
    """Y (outer, inner, N', I, J) by one (batched over N') matmul of the distinct operand
    rows: a strided view of the matmul's result (the caller's cast reads it in place).
    `part`: the outer rows to compute only (Y's first axis is then that part); `inner`:
    the inner operand's rows already in `ftype` (`_float_rows`); `scratch`: the result in
    the run's arena (`arena.empty`), which the caller gives back once read."""
    stream_outer = split[2]
    o_side, i_side = ("a", "w") if stream_outer else ("w", "a")
    o = _float_rows(_distinct(a_src, w_src, split, True, part), plan, ftype, o_side)
    i = _float_rows(_distinct(a_src, w_src, split, False), plan, ftype, i_side) if inner is None else inner
    a, w = (o, i) if stream_outer else (i, o)
    na, nn, ni, nr = a.shape
    nw, _, nj, _ = w.shape
    a2 = a.transpose(1, 0, 2, 3).reshape(nn, na * ni, nr)
    w2 = w.transpose(1, 0, 2, 3).reshape(nn, nw * nj, nr)
    out = arena.empty((nn, na * ni, nw * nj), ftype) if scratch else None
    z = np.matmul(a2, w2.transpose(0, 2, 1), out=out).reshape(nn, na, ni, nw, nj)
    return z.transpose((1, 3, 0, 2, 4) if stream_outer else (3, 1, 0, 2, 4))


def _parts(split: tuple[int, int, bool] | None, work: int, threads: int) -> list[slice]:
    """The outer rows of a folded matmul cut into `PIECES` parts per thread, which the
    threads take one at a time (a thread the machine holds back takes fewer); one part
    when the work is small or there are no threads to share it."""
    outer = 1 if split is None else split[0]
    n = min(threads * PIECES, outer) if work >= PARALLEL_MIN and threads > 1 else 1
    cuts = [outer * k // n for k in range(n + 1)]
    return [slice(lo, hi) for lo, hi in zip(cuts, cuts[1:])]


def _blocks(part: slice, row_bytes: int) -> list[slice]:
    """`part`'s outer rows cut into blocks whose products hold at most `BLOCK_BYTES` (one row
    at least): a first run's peak holds one block's products beside the result cells, not
    the whole matmul's (issue 61, first-run memory: drawn_s1_4's 2 MiB of products and its
    2 MiB of cells)."""
    rows = part.stop - part.start
    n = min(rows, max(1, -(-rows * row_bytes // BLOCK_BYTES)))
    cuts = [part.start + rows * k // n for k in range(n + 1)]
    return [slice(lo, hi) for lo, hi in zip(cuts, cuts[1:])]


def _per_row(a_src: np.ndarray, w_src: np.ndarray, plan: Plan, ftype) -> np.ndarray:
    """Y (rows, N', I, J) by one small matmul per spatial row, a block of rows at a time."""
    rows = a_src.shape[0]
    nn, ni, nr = plan.a.groups
    nj = plan.w.groups[1]
    y = np.empty((rows, nn, ni, nj), ftype)
    per_row = nn * (ni + nj) * nr
    rb = max(1, min(rows, INT_CHUNK // max(1, per_row)))
    a_buf = np.empty((rb, *plan.a.shape), ftype)
    w_buf = np.empty((rb, *plan.w.shape), ftype)
    live = None if plan.live is None else plan.live.astype(ftype)
    for r0 in range(0, rows, rb):
        n = min(rows, r0 + rb) - r0
        a, w = a_buf[:n], w_buf[:n]
        np.copyto(a, a_src[r0:r0 + n])
        np.copyto(w, w_src[r0:r0 + n])
        a = a.reshape(n, nn, ni, nr)
        w = w.reshape(n, nn, nj, nr)
        if live is not None:
            target = a if plan.live_on == "a" else w
            target *= live  # (N'|1, side|1, R|1) broadcasts over the rows
        np.matmul(a.reshape(n * nn, ni, nr), w.reshape(n * nn, nj, nr).transpose(0, 2, 1),
                  out=y[r0:r0 + n].reshape(n * nn, ni, nj))
    return y


def _folded_into(target: tuple[np.ndarray, tuple[int, ...]], a_src: Rows, w_src: Rows, plan: Plan,
                 ftype, split: tuple[int, int, bool], threads: int) -> None:
    """The folded matmul cast into the result cells `target` (`_dest_view`), its outer rows
    cut among `threads` threads when large (each part writes its own spatial rows)."""
    view, fine = target
    grid, zn = split[:2], plan.dest.shape[3]
    nn, ni, nr = plan.a.groups
    cells = np.reshape(view, (*grid, *fine), copy=False)
    parts = _parts(split, math.prod(grid) * nn * ni * plan.w.groups[1] * nr, threads)
    row_bytes = grid[1] * nn * ni * plan.w.groups[1] * np.dtype(ftype).itemsize  # products of one outer row
    blocks = [_blocks(part, row_bytes) for part in parts]
    inner = None if sum(map(len, blocks)) == 1 else \
        _float_rows(_distinct(a_src, w_src, split, False), plan, ftype, "w" if split[2] else "a")

    def fill(part: list[slice]) -> None:
        for rows in part:  # products of at most `BLOCK_BYTES` at a time, cast before the next block's
            # the products in the run's scratch, given back once cast: the run's next large request
            # (a commit's trim that drops cells), or the next run, takes the same memory (issue 61,
            # first-run memory: drawn_s1_4's 2 MiB of products beside 2 MiB of fresh trim)
            y = _folded(a_src, w_src, plan, ftype, split, rows, inner, scratch=True)
            np.copyto(cells[rows], np.broadcast_to(y[..., None], (*y.shape, zn)).reshape(y.shape[0], grid[1], *fine),
                      casting="unsafe")
            arena.give_back(y)

    share([lambda part=part: fill(part) for part in blocks], threads)


def contract_int(outer, s_op, t_op, plan: Plan,
                 shape: tuple[int, ...], into: np.ndarray, threads: int = 1) -> np.ndarray | None:
    """Integers: Y = A @ W^T in an exact float type, wrapped to i32 and scattered to the
    result cells of `into` (rows, *cells); None when no float type is exact. Rows holding copies
    of the same operands share one matmul; a large one is cut by its outer rows among
    `threads` threads, each casting its part into the result."""
    ftype = _int_ftype(outer, plan)
    if ftype is None:
        return None
    rows = shape[0]
    a_src, w_src = Rows(s_op.cells(plan.a), s_op.row_of), Rows(t_op.cells(plan.w), t_op.row_of)
    nn, ni, nr = plan.a.groups
    nj = plan.w.groups[1]
    grid = (rows, 1)  # Y's rows as (outer, inner): the folded matmul's view keeps them apart
    split = None
    if nr and rows > 1:  # the stored rows first: equal rows hold equal cells, compared as words
        split = _row_split(_row_proxy(s_op, a_src), _row_proxy(t_op, w_src)) or _row_split(a_src.full(), w_src.full())
    if split is not None:
        grid = split[:2]
    zn = plan.dest.shape[3]
    res = into.reshape(rows, plan.out_cells)
    covered = plan.dest.size == plan.out_cells  # every cell written (the view names each once)
    target = _dest_view(res, plan.dest) if ftype == np.float32 else None
    if not (target is not None and covered):
        res[...] = 0
    if target is not None and split is not None:  # exact integers in float32: the cast writes
        _folded_into(target, a_src, w_src, plan, ftype, split, threads)  # the result cells in place, part by part
        return res.reshape(shape)
    if nr == 0:
        y = np.zeros((rows, 1, nn, ni, nj), ftype)
    elif split is None:
        y = _per_row(a_src.full(), w_src.full(), plan, ftype)[:, None]
    else:
        y = _folded(a_src, w_src, plan, ftype, split)
    if target is not None:  # exact integers in float32: the cast writes the result cells in place
        view, fine = target
        cells = np.reshape(view, (*grid, *fine), copy=False)
        np.copyto(cells, np.broadcast_to(y[..., None], (*grid, nn, ni, nj, zn)).reshape(*grid, *fine),
                  casting="unsafe")
        return res.reshape(shape)
    values = np.broadcast_to(y[..., None], (*grid, nn, ni, nj, zn)).reshape(rows, -1)
    if ftype == np.float32:
        values = values.astype(np.int32)
    else:
        values = (values.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    res[:, plan.dest.reshape(-1)] = values
    return res.reshape(shape)
