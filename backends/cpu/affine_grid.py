"""The affine grid a computed index lies on, checked at every cell a block at a time.

Two readers of a value whose moves are not made yet (`compact_moves.Pending`) ask the same
question of the moves' index (`compact_moves.plan_of`): does the grid of cells they read,
laid out over `extents`, read elements `start + sum(i_a * step_a)` of the pending rows? If
so, one strided view or copy replaces the moved buffer (`engines._pending_read`, the
Transpose Engine's input; `views._composed`, a tile's DMA into its destination). The first
cell and the next one along each axis give the candidate grid; every cell is then compared
with it, a block of cells at a time, so no index table of the whole grid is made (issue 61,
first-run memory).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["grid_of"]

BLOCK = 1 << 12  # grid cells compared at a time (a few int64 arrays of 32 KiB: a first run's peak)


def grid_of(read: Callable[[np.ndarray], np.ndarray | None], extents: tuple[int, ...],
            block: int = BLOCK) -> tuple[int, tuple[int, ...]] | None:
    """(the element cell 0 reads, the element step along each axis of `extents`) when
    `read(k)` (the elements read by the cells of C-order ranks `k`, int64; None when one of
    them reads no element) is that affine grid at every cell; else None. An axis of one
    cell has step 0 (it is never taken)."""
    n = math.prod(extents)
    if n == 0:
        return None
    corners = read(np.array([0, *(math.prod(extents[a + 1:]) if size > 1 else 0 for a, size in enumerate(extents))],
                            np.int64))
    if corners is None:
        return None
    start = int(corners[0])
    steps = tuple(int(c) - start for c in corners[1:])
    for lo in range(0, n, block):
        k = np.arange(lo, min(n, lo + block), dtype=np.int64)
        got = read(k)
        if got is None or not np.array_equal(
                got, start + sum(d * st for d, st in zip(np.unravel_index(k, extents), steps))):
            return None
    return start, steps
