"""The interpreter's memories, as bytes read and written by address (visa/visa.lark).

- **DM**: per `(chip, cluster)`, `max(SLICE_SIZES)` byte arrays of `DM_SLICE_BYTES`; the
  address of byte `b` of slice `s` is `s * DM_SLICE_BYTES + b`, exactly the DM address of
  a DMA command. DM starts zero; only the offsets touched so far are stored.
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
from visa.interp.access import Flat, bounds_sum, copy_bytes, gather, scatter
from visa.interp.fast import pool
from visa.interp import trf_stale
from visa.interp.trf_later import Later
from visa.interp.trf_stale import Span

__all__ = ["Memory", "Flat", "Dm", "Lazy", "gather", "scatter", "copy_bytes"]


class Dm:
    """The DM of one (chip, cluster): `slices` byte arrays of `slice_bytes`, addressed
    `slice * slice_bytes + offset`. Only offsets up to the highest one touched so far are
    stored (a never-written byte reads zero, as in a DM created zero). Every access first
    calls `_grow` with the end of the offsets it touches and of the slices, so `touched`
    and `rows` bound them: the offsets from `touched` on, and the slices from `rows` on,
    still hold their initial zeros (a kernel of a few live slices zeroes, and hands back,
    only those). A store an earlier run handed back keeps that run's bytes until they are
    needed: `dirty`, offset ranges of its first `dirty_rows` slices, is zeroed where an
    access reaches it (`_grow`), or forgotten where a writer of every byte says it will
    write them (`overwrite`).

    A broadcast a DMA wrote may be held lazily (`hold`, only by a shortcut,
    visa/interp/fast/lazy.py): offsets [lo, hi) of some slices are each one row of a small
    array of distinct rows, not yet written into `data`. `_grow`, the gate every access goes
    through, first writes out (`_materialize`) every lazy region the access may reach; a
    reader that can take the lazy form asks for it (`lazy_view`) before it touches the
    store; a writer of every byte of a region forgets it (`overwrite`)."""

    def __init__(self, slices: int, slice_bytes: int, reserve: int = 0) -> None:
        self.slices = slices
        self.slice_bytes = slice_bytes
        self.data, self.resident, used = pool.zeros((slices, min(reserve, slice_bytes)))
        self.rows, self.touched = used
        self.dirty_rows = self.rows
        self.dirty: list[tuple[int, int]] = [(0, self.touched)] if self.rows and self.touched else []
        self.lazy: list[Lazy] = []

    def release(self) -> None:
        """Hand the store back for a later run (its touched bytes as they are: that run zeroes
        what it reaches; the pool counts them: untouched pages hold no memory) and forget it."""
        data, self.data = self.data, np.zeros((self.slices, 0), np.uint8)
        if data.size:
            used = (self.rows, min(self.touched, data.shape[1]))
            pool.give_back(data, max(self.resident, used[0] * used[1]), used)
        self.touched = self.rows = self.dirty_rows = 0
        self.dirty = []
        self.lazy = []

    def _grow(self, need: int, rows: int | None = None, low: int = 0, touched: np.ndarray | None = None) -> None:
        """Offsets `low` up to `need` and slices up to `rows` (None: every slice) are about
        to be touched; `touched`, when given: only those slices are (then a lazy region none
        of whose slices is among them stays held: a DMA command into the live slices does
        not write out the zeros held for its tensor's padding slices between them)."""
        self._extend(need, rows)
        if self.dirty:
            self._clean(low, need, True)
        if self.lazy:
            self._materialize(low, need, self.slices, touched)

    def _extend(self, need: int, rows: int | None) -> None:
        """`touched` and `rows` (and the store) grown to cover offsets up to `need` and
        slices up to `rows` (None: every slice)."""
        self.touched = max(self.touched, need)
        self.rows = self.slices if rows is None else max(self.rows, min(rows, self.slices))
        cap = self.data.shape[1]
        if need > cap:
            new = 4096
            while new < need:
                new *= 2
            grown = np.zeros((self.slices, min(new, self.slice_bytes)), np.uint8)
            grown[:, :cap] = self.data
            self.data, self.resident = grown, self.slices * cap

    def _clean(self, low: int, high: int, zero: bool) -> None:
        """Offsets [low, high) of the `dirty_rows` slices are no longer dirty: zeroed
        (`zero`), or about to be written over in every one of those slices."""
        kept = []
        for a, b in self.dirty:
            lo, hi = max(a, low), min(b, high)
            if lo >= hi:
                kept.append((a, b))
                continue
            if zero:
                self.data[:self.dirty_rows, lo:hi] = 0
            kept += [r for r in ((a, lo), (hi, b)) if r[0] < r[1]]
        self.dirty = kept

    def overwrite(self, base: int, size: int, slices: int) -> None:
        """Bytes [base, base + size) of the first `slices` slices are about to be written,
        every one: what an earlier run left there need not be zeroed first."""
        if self.dirty and slices >= self.dirty_rows:
            self._clean(base, base + size, False)
        if self.lazy:   # the bytes of a lazy region in the window need not be written out: cut away
            self.lazy = [part for z in self.lazy
                         for part in (_outside(z, base, base + size) if z.top <= slices else (z,))]

    def meets(self, low: int, high: int) -> bool:
        """Does a lazy region hold offsets in [low, high) (of some slice)?"""
        return any(z.lo < high and low < z.hi for z in self.lazy)

    def hold(self, region: Lazy) -> None:
        """Hold `region` lazily: its bytes are what its slices hold from now on (what an
        access reaches first is written out, `_grow`). Lazy regions it meets are written out
        first, so the regions never share a byte."""
        if self.lazy:
            met = [z for z in self.lazy if z.lo < region.hi and region.lo < z.hi and (z.which[region.slices] >= 0).any()]
            if met:
                self.lazy = [z for z in self.lazy if not any(z is m for m in met)]
                for z in met:
                    self.lazy += self._write_part(z, region.lo, region.hi)
        self.lazy.append(region)   # the store grows when it is written out (`_write_out`), if ever

    def lazy_view(self, lo: int, hi: int, slices: np.ndarray, shape: list[int], strides: list[int],
                  dtype: np.dtype) -> tuple[np.ndarray, np.ndarray] | None:
        """A read of `slices` through a lazy region: (each distinct row's elements of `dtype`
        in the loops `shape` / byte `strides` from offset `lo`, as a view `(distinct rows,
        *shape)`; each of `slices`' row among them) when one region holds offsets [lo, hi) of
        every one of them (the read's bytes lie there); else None."""
        found = None
        for z in self.lazy:
            if lo < z.hi and z.lo < hi:
                which = z.which[slices]
                if z.lo <= lo and hi <= z.hi and not (which < 0).any() and min(strides, default=0) >= 0:
                    found = z, which
                elif (which >= 0).any():   # part of the read lies elsewhere
                    return None
        if found is None:
            return None
        z, which = found
        view = np.ndarray((z.rows.shape[0], *shape), dtype, buffer=z.rows, offset=lo - z.lo,
                          strides=(z.rows.strides[0], *strides))
        return view, which

    def _materialize(self, low: int, high: int, rows: int, touched: np.ndarray | None = None) -> None:
        """Write out the lazy regions that meet offsets [low, high) in the first `rows` slices
        (in the slices `touched`, when given)."""
        kept = []
        for z in self.lazy:
            if z.lo < high and low < z.hi and z.first < rows and (touched is None or bool((z.which[touched] >= 0).any())):
                kept += self._write_part(z, low, high)
            else:
                kept.append(z)
        self.lazy = kept

    def _write_part(self, z: Lazy, low: int, high: int) -> list[Lazy]:
        """Write out the bytes of lazy region `z` in offsets [low, high); the regions of its
        other bytes (none, one or two), still held (an access of a few bytes of a tensor
        held lazily, or a tensor placed over part of a dead one, writes out those bytes only)."""
        lo, hi = max(z.lo, low), min(z.hi, high)
        if lo <= z.lo and z.hi <= hi:
            self._write_out(z)
            return []
        self._write_out(Lazy(lo, hi, z.slices, z.which, z.rows[:, lo - z.lo:hi - z.lo]))
        return _outside(z, lo, hi)

    def _write_out(self, z: Lazy) -> None:
        """Write a lazy region's bytes into the store (grown to hold them: a region never
        written out leaves the store as it was, so `touched` and `rows`, which bound what a
        pooled store holds, count it only now)."""
        self._extend(z.hi, z.top)
        if z.rows.shape[0] <= 64:    # each distinct row into its slices: one pass over the store
            row_of = z.which[z.slices]
            for j in range(z.rows.shape[0]):
                self.data[z.slices[row_of == j], z.lo:z.hi] = z.rows[j]
        else:
            self.data[z.slices, z.lo:z.hi] = z.rows[z.which[z.slices]]

    def locate(self, base: np.ndarray, offs: np.ndarray, width: int, what: str,
               op: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """As `Flat.locate`, for DM addresses `slice * slice_bytes + offset`."""
        bounds_sum(base, offs, width, self.slices * self.slice_bytes, what, op)
        sl, b0 = np.divmod(base, self.slice_bytes)
        first = b0.reshape(-1)[:1]
        if first.size and not (b0 != first[0]).any():   # one offset in every slice: split the sum
            b0 = first[0]
        off = b0 + offs
        if not off.size or (int(off.min()) >= 0 and int(off.max()) + width <= self.slice_bytes):
            if off.size:
                self._grow(int(off.max()) + width, int(sl.max()) + 1, int(off.min()))
            return self.data.reshape(-1), sl * self.data.shape[1], off
        sl, off = np.divmod(base + offs, self.slice_bytes)
        self._grow(int(off.max()) + width, int(sl.max()) + 1)
        return self.data.reshape(-1), sl * self.data.shape[1] + off, np.zeros((), np.int64)

    def zero(self, slices: int, base: int, size: int, written: np.ndarray | None = None,
             lazily: Any = None) -> None:
        """Zero bytes [base, base + size) of the first `slices` slices (nothing to do past
        `touched` or `rows`: those bytes were never written), but those of the slices
        `written` marks (booleans per slice): the caller writes every one of their bytes.
        `lazily(dm, base, size, slices)`: may hold the zeros as a lazy region (True if so)."""
        if base >= self.touched and not self.meets(base, base + size):
            return
        self.overwrite(base, size, slices)
        self._grow(base + size, 0, base)
        rows = min(slices, self.rows)
        if lazily is not None:
            zeroed = np.arange(rows) if written is None else np.flatnonzero(~written[:rows])
            if zeroed.size and lazily(self, base, size, zeroed):
                return
        if written is None or not written[:rows].any():
            self.data[:rows, base:base + size] = 0
        else:
            self.data[np.flatnonzero(~written[:rows]), base:base + size] = 0


class Lazy:
    """A broadcast held lazily in a DM (`Dm.hold`): offsets [lo, hi) of slice s hold
    `rows[which[s]]` for every slice s of `slices` (which[s] = -1 for the others)."""

    def __init__(self, lo: int, hi: int, slices: np.ndarray, which: np.ndarray, rows: np.ndarray) -> None:
        self.lo, self.hi, self.slices, self.which, self.rows = lo, hi, slices, which, rows
        self.first, self.top = int(slices.min()), int(slices.max()) + 1


def _outside(z: Lazy, low: int, high: int) -> list[Lazy]:
    """The parts of lazy region `z` outside offsets [low, high) (none, one or two; `z`
    itself when it does not meet them)."""
    if high <= z.lo or z.hi <= low:
        return [z]
    return [Lazy(a, b, z.slices, z.which, np.ascontiguousarray(z.rows[:, a - z.lo:b - z.lo]))
            for a, b in ((z.lo, low), (high, z.hi)) if a < b]


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

    def run_scratch(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """`scratch` that outlives its program (a value a later program reuses), until the
        next `run_scratch` (the arrays before it go back when the program ends) or
        `release`: one such value at a time."""
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
