"""A drained accumulator held as a view: `lane_fold`'s packets, read in place by a commit.

An `INTERLEAVED` drain of every lane emits, per row, the accumulator `(lanes, slots, cols)`
turned to `(slots x cols, lanes)`: a transposed view of it. The plain drain copies the view
lane by lane into a new stream, and the commit after it copies that stream again into the
DM. A `LaneView` holds the transposed view instead; a reader that takes any strides (a
commit's strided write, `visa.interp.steps.ProgramState.input`'s form "strided") reads it in
place, so the packets cross memory once, and any other reader gets the plain drain's stream
(`materialize`). The view reads the program's accumulator, which nothing writes after the
drain: a program's scratch lives until it ends (`visa.interp.memory.Memory.recycle`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from visa.interp.shortcuts import Held, register

__all__ = ["LaneView", "lane_view"]


class LaneView(Held):
    """A `(rows, T, P)` stream held as a view of any strides `values`; `plain()` makes the
    plain stream (a new array, the plain drain's)."""

    KIND = "strided"

    def __init__(self, values: np.ndarray, plain: Callable[[], np.ndarray]) -> None:
        self.values, self._plain = values, plain
        self.shape, self.dtype = values.shape, values.dtype

    def materialize(self) -> np.ndarray:
        return self._plain()

    def strided(self) -> np.ndarray:
        return self.values


@register("lane_fold_view")
def lane_view(values: np.ndarray, plain: Callable[[], np.ndarray]) -> LaneView:
    """The drained packets `values` (a view of the accumulator) held as they are."""
    return LaneView(values, plain)
