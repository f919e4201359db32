"""Where the whole-contraction path writes its results (backends/cpu/contract_fast.py):
the result cells `dest` of a plan as one strided view of the result rows, when it has
one, so that a cast-and-copy into the view is the scatter; the view's form is found once
per `dest`. An integer result is stored lane-innermost (`_lane_last`), the order
`contract_lane` moves it to, so that move is a view."""

from __future__ import annotations

import functools

import attrs

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu import layout, moves_strided
from backends.cpu.contract_plan import Plan

__all__ = ["_dest_view", "_lane_last", "_lane_last_plan"]


def _dest_view(res: np.ndarray, dest: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """The result cells `dest` (I, J, N', Z) of every row of `res` (rows, cells) as one
    writeable strided view (rows, *fine) over `dest`'s cells in C order cut into digits of
    one stride each, and that shape `fine`, when `dest` is affine over them and names each cell once
    (then writing the view is the scatter, cell for cell); None otherwise. The form is
    found once per `dest` (`_dest_form`)."""
    found = _dest_form(np.ascontiguousarray(dest, np.int64).tobytes())
    if found is None:
        return None
    first, steps, fine = found
    item = res.itemsize
    view = as_strided(res[:, first:], (res.shape[0], *fine), (res.strides[0], *(s * item for s in steps)))
    return view, fine


@functools.lru_cache(maxsize=64)
def _dest_form(cells: bytes) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(first cell, strides, fine shape) of `_dest_view` for the int64 `dest` of these
    bytes; None when it has none."""
    dest = np.frombuffer(cells, np.int64)
    if dest.size == 0 or np.unique(dest).size != dest.size:
        return None
    dims = moves_strided._dims((dest,))  # digits of one stride each, inner to outer
    if dims is None:
        return None
    dims = dims[::-1] or [(1, (0,))]
    return int(dest[0]), tuple(int(steps[0]) for _, steps in dims), tuple(n for n, _ in dims)


def _lane_last(result, tail: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """(buffer, live rows) of an integer contraction's result (`layout.new_rows`), its
    memory holding each row's cells lane-innermost, (time, packet, lane): the buffer is a
    transposed view with the type's (lane, time, packet) axes, so that `contract_lane`,
    which moves the lane innermost, finds its result already in place; (None, None) when
    the live rows are not one run (then the cells are stored in their own order)."""
    lanes, steps, cols = tail
    full, live = layout.new_rows(result, (steps, cols, lanes), np.int32)
    if live is full:
        return None, None
    return np.moveaxis(full, -1, -3), live.reshape(live.shape[0], -1)


@functools.lru_cache(maxsize=64)
def _lane_last_plan(plan: Plan, lanes: int, per_lane: int) -> Plan:
    """`plan` writing its result cells (lane, time, packet) at their lane-innermost place."""
    dest = plan.dest % per_lane * lanes + plan.dest // per_lane
    return attrs.evolve(plan, dest=dest)
