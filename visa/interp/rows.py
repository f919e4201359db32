"""The live `(chip, cluster, slice)` positions a TU program runs on.

Every slice runs its own pipeline (docs/machine/index.md); slices, clusters and chips that the
program's `space` marks as padding run nothing, so the interpreter computes only the live
rows. A row's slice index is its position in the `Slice` mapping, which is also its DM
slice (visa/visa.lark: `slice * DM_SLICE_BYTES + offset`) and its TRF.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from visa.interp.shortcuts import per_record
from visa.interp.values import pad_mask

__all__ = ["Rows", "rows_of", "slice_grid"]


class Rows:
    """Live rows of a program's space: parallel `chip`, `cluster`, `slice` index arrays
    (read-only: a program's rows are shared by every run of it, `rows_of`)."""

    def __init__(self, space: tuple[Any, Any, Any]) -> None:
        live = ~pad_mask(*space)
        chip, cluster, slice_ = np.nonzero(live)
        self.chip = chip.astype(np.int64)
        self.cluster = cluster.astype(np.int64)
        self.slice = slice_.astype(np.int64)
        for a in (self.chip, self.cluster, self.slice):
            a.setflags(write=False)
        self.count = len(self.slice)
        self.shape = live.shape
        self._groups: list[tuple[tuple[int, int], np.ndarray]] | None = None
        self._slices: list[tuple[tuple[int, int], np.ndarray, np.ndarray, bool]] | None = None
        self._grids: list[list[tuple[int, int]] | None] | None = None

    def groups(self) -> Iterator[tuple[tuple[int, int], np.ndarray]]:
        """((chip, cluster), indices of its rows) for every (chip, cluster) with live rows; the
        rows are in (chip, cluster, slice) order (`np.nonzero`'s), so each group's indices
        are consecutive."""
        if self._groups is None:
            keys = self.chip * (self.shape[1] or 1) + self.cluster
            groups = []
            for key in np.unique(keys):
                sel = np.flatnonzero(keys == key)
                sel.setflags(write=False)
                groups.append(((int(self.chip[sel[0]]), int(self.cluster[sel[0]])), sel))
            self._groups = groups
        return iter(self._groups)

    def slice_groups(self) -> list[tuple[tuple[int, int], np.ndarray, np.ndarray, bool]]:
        """`groups` with each group's slice indices and whether they are consecutive
        (increasing by one: a strided walk reads them)."""
        if self._slices is None:
            out = []
            for key, sel in self.groups():
                slices = self.slice[sel]
                slices.setflags(write=False)
                run = bool(len(slices)) and bool(np.array_equal(slices, slices[0] + np.arange(len(slices))))
                out.append((key, sel, slices, run))
            self._slices = out
        return self._slices

    def slice_grids(self) -> list[list[tuple[int, int]] | None]:
        """Per group of `slice_groups`, the levels (count, step) of a strided walk over its
        slices: one level when they are consecutive, else `slice_grid`'s (None: no grid);
        found once (every run of a program asks)."""
        if self._grids is None:
            self._grids = [[(len(slices), 1)] if run else slice_grid(slices)
                           for _, _, slices, run in self.slice_groups()]
        return self._grids


@per_record
def rows_of(space: tuple[Any, Any, Any]) -> Rows:
    """The `Rows` of a program's space (one object per space tuple)."""
    return Rows(space)


def slice_grid(slices: np.ndarray) -> list[tuple[int, int]] | None:
    """(count, step) of each level of `slices`, outer first, when they are a grid in order:
    every step-th slice (a placement on a part of the slices: 0, 2, 4, ...) or rows of such
    runs (a tile padded inside the kernel: 12 runs of 12 slices, 16 apart); a strided walk
    reads them too. None otherwise."""
    if len(slices) < 2:
        return None
    inner = int(slices[1]) - int(slices[0])
    steps = np.diff(slices)
    run = int(np.argmax(steps != inner)) + 1 if (steps != inner).any() else len(slices)
    outer = int(slices[run]) - int(slices[0]) if run < len(slices) else 0
    if inner <= 0 or len(slices) % run or (run < len(slices) and outer <= 0):
        return None
    grid = [(len(slices) // run, outer), (run, inner)]
    want = slices[0] + outer * np.arange(grid[0][0])[:, None] + inner * np.arange(run)
    return grid if np.array_equal(slices, want.reshape(-1)) else None
