"""A DMA broadcast into DM held lazily: the command's distinct rows, not its copies.

A command from HBM whose slice loops repeat their source (a stride-0 loop over slices: the
same bytes into many slices) writes `slices x span` bytes of which only `distinct x span`
differ. `dma_lazy` copies the distinct rows once into an array of their own and holds the
command's destination as a `Lazy` region of the DM (`visa.interp.dm.Dm.hold`): slice s
of it holds row which[s]. Nothing is written into the DM store; any access of the store
that may reach the region writes it out first (`Dm._grow`, the one gate of every DM
access), so every reader that does not know the lazy form reads the same bytes as before.
The feed of a contraction (`feed._repeated`) reads through it: each distinct row once
(`gather_groups` copies the rows of each (chip, cluster) group into the feed's stream).
The slices a DMA's new tensor does not write (the padding slices of a placement on every
other slice) are held alike, as one row of zeros (`zero_lazy`).

Held only when it pays: at least `LAZY_BYTES` bytes of copies and at least two copies of
every distinct row on average; a command the analysis does not describe (a walk that is not
one dense byte range per slice, a slice written twice, bytes out of bounds) is left to the
plain copy, which reports any fault.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from visa.interp.dma import walk
from visa.interp.dm import Lazy
from visa.interp.shortcuts import per_record, register
from visa.interp.strided import flat_walk, injective, view

__all__ = ["LAZY_BYTES", "broadcast_rows", "dma_lazy", "gather_groups", "zero_lazy"]

LAZY_BYTES = 1 << 18
"""The fewest bytes of copies a command writes for it to be held lazily."""


@per_record
def broadcast_rows(cmd: Any, base: int, slice_bytes: int, slices: int) -> tuple[Any, ...] | None:
    """The lazy form of command `cmd` writing the DM from `base`: (offset in a slice, span,
    the slices it writes (sorted), each one's distinct row, each distinct row's source offset
    from the command's source base, the inner loops' sizes, source strides, destination
    strides); None when it is not one dense byte range per slice."""
    sizes = [e.size for e in cmd.entries]
    src = [e.src_stride for e in cmd.entries]
    dst = [e.dst_stride for e in cmd.entries]
    if base < 0 or any(s < 0 for s in src + dst):
        return None
    first, off = divmod(base, slice_bytes)
    inner = [(n, s, d) for n, s, d in zip(sizes, src, dst) if d % slice_bytes]
    outer = [(n, s, d // slice_bytes) for n, s, d in zip(sizes, src, dst) if d % slice_bytes == 0]
    span = sum((n - 1) * d for n, _, d in inner) + 1
    if (int(np.prod([n for n, _, _ in inner])) != span or off + span > slice_bytes
            or not injective([n for n, _, _ in inner], [d for _, _, d in inner], 1)):
        return None
    where, source = np.full((), first, np.int64), np.zeros((), np.int64)
    for n, s, k in outer:
        where = where[..., None] + np.arange(n, dtype=np.int64) * k
        source = source[..., None] + np.arange(n, dtype=np.int64) * s
    where, source = where.reshape(-1), source.reshape(-1)
    if where.size != np.unique(where).size or int(where.max()) >= slices:
        return None
    order = np.argsort(where, kind="stable")
    distinct, which = np.unique(source[order], return_inverse=True)
    return (off, span, where[order], which.reshape(-1).astype(np.int64), distinct,
            [n for n, _, _ in inner], [s for _, s, _ in inner], [d for _, _, d in inner], _grid(outer, distinct))


def _grid(outer: list[tuple[int, int, int]], distinct: np.ndarray) -> tuple[list[int], list[int]] | None:
    """(sizes, source strides) of the outer loops that move the source, outermost first,
    when their walk is the distinct rows' source offsets in order (then the rows are one
    strided copy, not one per row); else None."""
    loops = sorted(((n, s) for n, s, _ in outer if s and n > 1), key=lambda loop: -loop[1])
    sizes, strides = [n for n, _ in loops], [s for _, s in loops]
    at = walk(0, sizes, strides).reshape(-1)
    if at.size != distinct.size or not np.array_equal(at, distinct):
        return None
    return sizes, strides


@register("dma_lazy")
def dma_lazy(mem: Any, cmd: Any, src: np.ndarray, src_base: int, dst_base: int) -> bool:
    """Hold command `cmd` of a DMA from the HBM bytes `src` (from `src_base`) into the DM of
    its part (from `dst_base`) lazily when `broadcast_rows` describes it and its source is in
    bounds; False leaves it to the plain copy."""
    form = broadcast_rows(cmd, dst_base, mem.dm_slice, mem.slices)
    if form is None:
        return False
    off, span, where, which, distinct, sizes, src_strides, dst_strides, grid = form
    if where.size * span < LAZY_BYTES or 2 * distinct.size > where.size:
        return False
    rows = np.empty((distinct.size, span), np.uint8)
    if grid is not None:    # the distinct rows are a strided walk of the source: one copy
        outer = [*grid[0], *sizes]
        walk = flat_walk(src, src_base + int(distinct[0]), outer, [*grid[1], *src_strides], 1)
        if walk is None:
            return False
        step = [span * math.prod(grid[0][i + 1:]) for i in range(len(grid[0]))]
        np.copyto(np.ndarray(tuple(outer), np.uint8, buffer=rows, strides=(*step, *dst_strides)),
                  view(walk, outer, np.dtype(np.uint8)))
    else:
        walks = [flat_walk(src, src_base + int(u), sizes, src_strides, 1) for u in distinct]
        if any(w is None for w in walks):
            return False
        for j, walk in enumerate(walks):
            np.copyto(np.ndarray(tuple(sizes), np.uint8, buffer=rows[j], strides=tuple(dst_strides)),
                      view(walk, sizes, np.dtype(np.uint8)))
    at = np.full(mem.slices, -1, np.int64)
    at[where] = which
    mem.dm(cmd.part.chip, cmd.part.cluster).hold(Lazy(off, off + span, where, at, rows))
    return True


@register("dm_zero_lazy")
def zero_lazy(dm: Any, base: int, size: int, slices: np.ndarray) -> bool:
    """Hold bytes [base, base + size) of `slices` of `dm` as zeros, lazily (a DMA's new tensor:
    the slices its commands do not write, e.g. the padding half of the slices), when they
    are at least `LAZY_BYTES`; False leaves them to be zeroed."""
    if slices.size * size < LAZY_BYTES:
        return False
    which = np.full(dm.slices, -1, np.int64)
    which[slices] = 0
    dm.hold(Lazy(base, base + size, slices.astype(np.int64), which, np.zeros((1, size), np.uint8)))
    return True


_ROW_BY_ROW = 64
"""The most stored rows `gather_groups` copies one at a time (a fancy-index gather and scatter
moves each twice: a drawn GEMM's 8 distinct rows of 256 KiB, 1.6 -> 0.5 ms a feed)."""


def gather_groups(distinct: np.ndarray, groups: list, views: list, helds: list, sparse: bool) -> None:
    """Each (chip, cluster) group's packets into its rows of `distinct`: a strided view copied,
    a lazy broadcast's (distinct rows, each slice's row) taken, only the `held` rows when
    `sparse`."""
    for k, ((_, sel, _, _), v) in enumerate(zip(groups, views)):
        at = distinct[int(sel[0]):int(sel[0]) + len(sel)]
        if not isinstance(v, tuple):
            np.copyto(at, v)
            continue
        source, which = v
        if sparse:
            stored = np.unique(helds[k]) - int(sel[0])
            if stored.size <= _ROW_BY_ROW:   # a few (large) rows: each copied once, not gathered then placed
                for r, w in zip(stored.tolist(), which[stored].tolist()):
                    at[r] = source[w]
            else:
                at[stored] = source[which[stored]]
        else:    # the distinct rows in order first (a transposed view copies element by element), then
            np.take(np.ascontiguousarray(source), which, axis=0, out=at, mode="clip")   # whole rows, unbuffered
