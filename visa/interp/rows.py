"""The live `(chip, cluster, slice)` positions a TU program runs on.

Every slice runs its own pipeline (docs/machine/index.md); slices, clusters and chips that the
program's `space` marks as padding run nothing, so the interpreter computes only the live
rows. A row's slice index is its position in the `Slice` mapping, which is also its DM
slice (visa/visa.lark: `slice * DM_SLICE_BYTES + offset`) and its TRF.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from visa.interp.values import pad_mask

__all__ = ["Rows"]


class Rows:
    """Live rows of a program's space: parallel `chip`, `cluster`, `slice` index arrays."""

    def __init__(self, space: tuple[Any, Any, Any]) -> None:
        live = ~pad_mask(*space)
        chip, cluster, slice_ = np.nonzero(live)
        self.chip = chip.astype(np.int64)
        self.cluster = cluster.astype(np.int64)
        self.slice = slice_.astype(np.int64)
        self.count = len(self.slice)
        self.shape = live.shape

    def groups(self) -> Iterator[tuple[tuple[int, int], np.ndarray]]:
        """((chip, cluster), indices of its rows) for every (chip, cluster) with live rows."""
        keys = self.chip * (self.shape[1] or 1) + self.cluster
        for key in np.unique(keys):
            sel = np.flatnonzero(keys == key)
            yield (int(self.chip[sel[0]]), int(self.cluster[sel[0]])), sel
