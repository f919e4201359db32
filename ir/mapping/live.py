"""The live positions of a mapping (the positions holding a cell, not padding), from its
factor form: a pure padding factor holds a cell at its first position only, a ragged factor
where its table says, every other factor at all of its positions. No cell table is built."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ir.mapping.cells import LIVE, Padding
from ir.mapping.factors import PaddingFactor, RaggedFactor
from ir.mapping.nodes import Mapping
from ir.memo import memo

__all__ = ["live_positions", "live_grid", "nibble_bytes", "is_window"]


@functools.lru_cache(maxsize=256)
def live_positions(mapping: Mapping) -> np.ndarray:
    """The positions of `mapping` that hold a cell (not padding), ascending."""
    mask = np.ones(1, bool)
    for f in mapping.factors():
        if isinstance(f, PaddingFactor):
            part = np.zeros(f.extent, bool)
            part[0] = True
        elif isinstance(f, RaggedFactor):
            part = np.array([not isinstance(c, Padding) for c in f.cells], bool)
        else:
            part = np.ones(f.extent, bool)
        mask = (mask[:, None] & part[None, :]).reshape(-1)
    return np.flatnonzero(mask)


@functools.lru_cache(maxsize=1024)
def live_grid(mapping: Mapping) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """`live_positions` as a grid (first position, ((count, step), ... outermost first)),
    every live position `first + sum i_k * step_k`, consecutive factors of one run merged
    (the fewest dimensions), from the factors alone: no array of the positions. None when
    a ragged factor's live cells are not evenly spaced (no grid) or no position is live."""
    first, dims, step = 0, [], 1  # dims innermost first
    for f in reversed(mapping.factors()):
        if isinstance(f, RaggedFactor):
            live = [k for k, c in enumerate(f.cells) if not isinstance(c, Padding)]
            gaps = {b - a for a, b in zip(live, live[1:])}
            if not live or len(gaps) > 1:
                return None
            start, count, gap = live[0], len(live), gaps.pop() if gaps else 1
        else:
            start, count, gap = 0, 1 if isinstance(f, PaddingFactor) else f.extent, 1
            if count == 0:
                return None
        first += start * step
        if count > 1:
            if dims and dims[-1][0] * dims[-1][1] == gap * step:
                dims[-1] = (dims[-1][0] * count, dims[-1][1])
            else:
                dims.append((count, gap * step))
        step *= f.extent
    return first, tuple(reversed(dims))


def nibble_bytes(view: Any, offset: int) -> np.ndarray | None:
    """The bytes of the Element level a 4-bit fill of `view` at cell `offset` writes (ascending),
    or None when a touched byte holds a cell the view does not name (VIEW-14 refuses that fill;
    lowering and the rule share this geometry)."""
    q = live_positions(view.element) + offset
    if q.size == 0:
        return q
    cells = set(q.tolist())
    if any((c ^ 1) not in cells for c in cells):
        return None
    return np.unique(q // 2)


@memo()
def is_window(element: Any, window: Any, offset: int) -> bool:
    """Whether `window` at cell `offset` names cells of `element` as a tile does: the same
    extent, and every live cell p of the window is the element's cell p + offset, whose index
    is the window cell's plus the index of the element's cell at `offset` (axis by axis).
    Once per distinct three: each repeated commit into a window asks it."""
    n = element.size
    if window.size != n or not 0 <= offset < max(n, 1):
        return False
    live = live_positions(window)
    if live.size == 0:
        return True
    q = live + offset
    if int(q[-1]) >= n:
        return False
    mine, theirs, start = window.cells(live), element.cells(q), element.cells(np.array([offset]))
    if not ((theirs.status == LIVE).all() and start.status[0] == LIVE):
        return False
    for axis, coords in theirs.coords.items():
        want = start.coords[axis][0] + (mine.coords[axis] if axis in mine.coords else 0)
        if not np.array_equal(coords, np.broadcast_to(want, coords.shape)):
            return False
    return set(mine.coords) <= set(theirs.coords)
