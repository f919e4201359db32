"""The interpreter's memories, as bytes read and written by address (visa/visa.lark).

- **DM**: per `(chip, cluster)`, `max(SLICE_SIZES)` byte arrays of `DM_SLICE_BYTES`; the
  address of byte `b` of slice `s` is `s * DM_SLICE_BYTES + b`, exactly the DM address of
  a DMA command. DM starts zero; only the offsets touched so far are stored (`Dm`,
  visa/interp/dm.py).
- **TRF**: per `(chip, cluster)`, every slice's `TRF_BYTES` bytes, made of 32-byte rows
  (two banks interleaved: an even row starts a 64-byte bank pair), stored row-major as
  `(TRF_BYTES / 32, slices, 32)`: row `r` of every slice is one contiguous run, so a load
  or read of the same rows in many slices touches few pages. A TRF tensor of `L` lanes
  sees lane `l` as the `TRF_BYTES / L` bytes from `l * TRF_BYTES / L`.
- **HBM**: one byte array per tensor (`size(Chip)` copies of its element bytes).

The reads and writes by address (`gather`, `scatter`, `copy_bytes`) and the plain byte memory
(`Flat`) are in visa/interp/access.py, exported here too; every address is bounds-checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from visa.interp.fast.copies import CopyNotes
from visa.interp.errors import InterpError
from visa.interp.access import Flat, copy_bytes, gather, scatter
from visa.interp.fast import pool
from visa.interp import trf_stale
from visa.interp.trf_later import Later
from visa.interp.trf_stale import Span
from visa.interp.dm import Dm

__all__ = ["Memory", "Flat", "gather", "scatter", "copy_bytes"]


class Memory:
    """DM, TRF and HBM of one kernel run on `target`."""

    def __init__(self, target: Any, dm_reserve: int = 0) -> None:
        """`dm_reserve`: the DM offsets the run's tensors occupy (stored from the start,
        so a DM does not grow and copy itself as they are created)."""
        c = target.constants
        self.target = target
        self.dm_slice = c.DM_SLICE_BYTES
        self.slices = max(c.SLICE_SIZES)
        self.trf_bytes = c.TRF_BYTES
        self.row_bytes = c.FLIT_BYTES
        self._dm: dict[tuple[int, int], Dm] = {}
        self._trf: dict[tuple[int, int], np.ndarray] = {}
        self._trf_stale: dict[tuple[int, int], list[Span]] = {}   # what an earlier run wrote (trf_stale.py)
        self._trf_written: set[tuple] = set()   # (chip, cluster, lanes, first, rows, a span's slices)
        self._trf_later = Later()               # copies a load left for later (trf_later.py)
        self.dm_address: dict[int, int] = {}     # DM tensor id -> byte address (visa/visa.lark)
        self.trf_row: dict[int, int] = {}        # TRF tensor id -> first row (visa/visa.lark)
        self.dm_reserve = min(dm_reserve, self.dm_slice)
        self._scratch: list[tuple[np.ndarray, int | None]] = []
        self._run_scratch: list[tuple[np.ndarray, int | None]] = []   # `run_scratch`'s, given back by `release`
        self.copies = CopyNotes()              # DM slices a DMA just filled alike (visa/interp/fast/copies.py)

    def dm(self, chip: int, cluster: int) -> Dm:
        """The DM of one (chip, cluster), all slices."""
        key = (int(chip), int(cluster))
        if key not in self._dm:
            self._dm[key] = Dm(self.slices, self.dm_slice, self.dm_reserve)
        return self._dm[key]

    def _trf_store(self, key: tuple[int, int]) -> np.ndarray:
        """The TRF store of `key`, a pooled one when there is one (its rows an earlier run
        wrote, as `trf_stale` spans, in `_trf_stale` until a write or `trf` zeroes them)."""
        if key not in self._trf:
            shape = (self.trf_bytes // self.row_bytes, self.slices, self.row_bytes)
            entry = pool.pooled_entry(shape, np.uint8, True)
            self._trf[key] = np.zeros(shape, np.uint8) if entry is None else entry[0]
            if entry is not None and entry[2] is not None:
                self._trf_stale[key] = list(entry[2][1])
        return self._trf[key]

    def trf(self, chip: int, cluster: int, reading: np.ndarray | None = None) -> np.ndarray:
        """The TRF bytes of one (chip, cluster), (TRF_BYTES / 32 rows, slices, 32), zero where no
        write of this run reached; those of `reading` only (else all slices) up to date."""
        key = (int(chip), int(cluster))
        data = self._trf_store(key)
        stale = self._trf_stale.get(key)
        if stale:
            trf_stale.zero(data, stale)
            stale.clear()       # only once zero: a reader never sees the rows half done
        self._trf_later.before_read(key, reading)
        return data

    def trf_later(self, chip: int, cluster: int, lanes: int, first: int, rows: int, targets: Any, copy: Any) -> None:
        """`copy()` writes rows `first..` of each lane of the slices `targets` when needed (trf_later.py)."""
        self._trf_later.add((int(chip), int(cluster)), self.lane_rows(lanes, first, rows), targets, copy)

    def trf_lanes(self, chip: int, cluster: int, lanes: int) -> np.ndarray:
        """The same TRF bytes seen by a tensor of `lanes` lanes: (lanes, rows per lane, slices, 32)."""
        return self.trf(chip, cluster).reshape(lanes, -1, self.slices, self.row_bytes)

    def lane_rows(self, lanes: int, first: int, rows: int) -> list[tuple[int, int]]:
        """Rows `first .. first + rows - 1` of every lane as row ranges of the whole TRF."""
        per = self.trf_bytes // self.row_bytes // lanes
        return [(lane * per + first, lane * per + first + rows) for lane in range(lanes)]

    def trf_rows(self, chip: int, cluster: int, lanes: int, first: int, rows: int,
                 every_slice: bool | slice = False) -> np.ndarray:
        """Rows `first .. first + rows - 1` of every lane, every slice, to write into:
        (lanes, rows, slices, 32). Every write of non-zero bytes goes through here, so
        `release` knows which rows the next run must zero. `every_slice`: the caller writes
        every byte of those rows in every slice (True), or in the slices of that slice and
        no byte of any other: what an earlier run left there is not zeroed first (elsewhere it
        stays for a later write to cover, `trf_stale`, until a reader's `trf` zeroes it)."""
        key = (int(chip), int(cluster))
        covered = trf_stale.covered_slices(every_slice, self.slices) if isinstance(every_slice, slice) else every_slice
        self._trf_written.add((*key, lanes, first, rows, covered if isinstance(covered, tuple) else None))
        ranges = self.lane_rows(lanes, first, rows)
        self._trf_later.before_write(key, ranges, every_slice)
        for lo, hi in ranges:
            self.copies.forget(("trf", *key), lo, hi)
        data = self._trf_store(key)
        stale = self._trf_stale.get(key, [])
        for lo, hi in ranges:
            stale, now = trf_stale.cut(stale, lo, hi, True if covered is None else covered, self.slices)
            trf_stale.zero(data, now)
        self._trf_stale[key] = stale
        return data.reshape(lanes, -1, self.slices, self.row_bytes)[:, first:first + rows]

    def scratch(self, shape: tuple[int, ...], dtype: Any, resident: int | None = None) -> np.ndarray:
        """An uninitialised array the caller overwrites entirely (`resident`: writes only that
        many bytes of, which the pool then counts), owned by this run until `release` (reused
        from an earlier run when one of that shape is pooled)."""
        entry = pool.pooled_entry(shape, dtype)
        data = np.empty(shape, dtype) if entry is None else entry[0]
        self._scratch.append((data, resident))
        return data

    def run_scratch(self, shape: tuple[int, ...], dtype: Any, more: bool = False) -> np.ndarray:
        """`scratch` that outlives its program (a value a later program reuses), until the
        next `run_scratch` (the arrays before it go back when the program ends) or
        `release`: one such value at a time; `more`: one more array of the same value (the
        arrays before it stay)."""
        if not more:
            self._scratch.extend(self._run_scratch)
            self._run_scratch.clear()
        data = self.scratch(shape, dtype)
        self._run_scratch.append(self._scratch.pop())
        return data

    def recycle(self) -> None:
        """A program is over: the scratch arrays its streams used go back to the pool (a
        program's result holds none of them: DM addresses, TRF rows, copied VRF words)."""
        for data, resident in self._scratch:
            pool.give_back(data, resident, pool.ANY)
        self._scratch.clear()

    def release(self) -> None:
        """The run is over: its DM stores and scratch arrays go back to the pool (nothing
        may read them after)."""
        for dm in self._dm.values():
            dm.release()
        self._dm.clear()
        written: dict[tuple[int, int], list[Span]] = {}
        for chip, cluster, lanes, first, rows, at in self._trf_written:
            written.setdefault((chip, cluster), []).extend((lo, hi, at) for lo, hi in self.lane_rows(lanes, first, rows))
        self._trf_written.clear()
        for key, data in self._trf.items():    # its written rows zeroed by the next run's `trf`
            pool.give_back(data, None, ("rows", tuple(written.get(key, ()))) if key in written else None)
        self._trf.clear()
        self._trf_stale.clear()
        self._trf_later.clear()
        self._scratch.extend(self._run_scratch)
        self._run_scratch.clear()
        self.recycle()

    def zero_dm(self, parts: Sequence[tuple[int, int]], slices: int, base: int, size: int, op: Any = None,
                written: dict[tuple[int, int], np.ndarray] | None = None, lazily: Any = None) -> None:
        """Zero bytes [base, base + size) of the first `slices` slices of each (chip, cluster):
        the padding of a DM tensor an executor creates is zero (docs/machine/index.md); but
        those of the slices `written` marks for that (chip, cluster) (`Dm.zero`, `lazily` too)."""
        if base < 0 or base + size > self.dm_slice or slices > self.slices:
            raise InterpError(f"DM tensor [{base}, {base + size}) x {slices} slices does not fit DM", op)
        for chip, cluster in parts:
            self.dm(chip, cluster).zero(slices, base, size, (written or {}).get((int(chip), int(cluster))), lazily)

    def overwrite_dm(self, parts: list[tuple[int, int]], slices: int, base: int, size: int) -> None:
        """Bytes [base, base + size) of the first `slices` slices of each (chip, cluster) are
        about to be written, every one (instead of `zero_dm`: a DMA or commit writing its
        whole new tensor)."""
        for chip, cluster in parts:
            self.dm(chip, cluster).overwrite(base, size, slices)
