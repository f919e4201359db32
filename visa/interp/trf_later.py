"""The copies a TRF load left for later (`visa.interp.memory.Memory.trf_later`).

A load whose stream holds only a few distinct rows (a switch broadcast: `Held.stored_rows`)
writes each distinct row into the first slice holding it, and leaves the copies into the
other slices waiting: a reader that reads those first slices only (the contraction's
weight operand, when the load's note says which slices hold the same bytes,
visa/interp/fast/copies.py) never needs them, and `drawn_s1_5` wrote 8 MiB of copies a run
(every second slice's 32-byte rows) that nothing read. The copies are made before anything
else reads the TRF or writes into it; a write that covers every byte they would write drops
them; copies into rows apart wait side by side (a tile's next load into other rows).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["Later"]

Ranges = list[tuple[int, int]]


class Later:
    """The waiting copies of each (chip, cluster): (TRF row ranges they write, a mask of the
    slices they write, the function that writes them), of loads into rows apart (a write
    meeting a load's rows makes or drops its copies first)."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[int, int], list[tuple[Ranges, np.ndarray, Callable[[], None]]]] = {}

    def add(self, key: tuple[int, int], ranges: Ranges, targets: np.ndarray, copy: Callable[[], None]) -> None:
        """`copy()` writes rows `ranges` of the slices `targets` (a mask); made or dropped
        first (`before_write`) when copies already wait in those rows."""
        self.before_write(key, ranges, False)
        self._waiting.setdefault(key, []).append((ranges, targets, copy))

    def before_read(self, key: tuple[int, int], reading: np.ndarray | None = None) -> None:
        """Make the waiting copies into any of the slices `reading` (all of them when None)."""
        found = self._waiting.get(key)
        if found:
            now = [reading is None or targets[reading].any() for _, targets, _ in found]
            made = [w for w, due in zip(found, now) if due]
            found[:] = [w for w, due in zip(found, now) if not due]
            for _, _, copy in made:
                copy()

    def before_write(self, key: tuple[int, int], ranges: Ranges, covered: bool | slice) -> None:
        """Make the waiting copies whose rows meet `ranges`, or drop them when the caller is
        about to write every byte they would: rows `ranges` of the slices `covered` (True:
        every slice; False: the caller may leave any byte; `Memory.trf_rows`' `every_slice`)."""
        found = self._waiting.get(key)
        if not found:
            return
        kept = []
        for rows, targets, copy in found:
            if not any(a < hi and lo < b for a, b in ranges for lo, hi in rows):
                kept.append((rows, targets, copy))
                continue
            whole = covered is True
            if isinstance(covered, slice):
                inside = np.zeros(targets.size, np.bool_)
                inside[covered] = True
                whole = not (targets & ~inside).any()
            if not (whole and all(any(a <= lo and hi <= b for a, b in ranges) for lo, hi in rows)):
                copy()
        found[:] = kept

    def clear(self) -> None:
        """The run is over: nothing reads the copies."""
        self._waiting.clear()
