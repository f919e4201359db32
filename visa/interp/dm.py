"""The DM of one (chip, cluster) as the interpreter stores it (`Dm`), and the broadcasts
it may hold lazily (`Lazy`): visa/interp/memory.py's DM part.

The address of byte `b` of slice `s` is `s * DM_SLICE_BYTES + b`, exactly the DM address
of a DMA command; every access is bounds-checked (`bounds_sum`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from visa.interp.errors import InterpError
from visa.interp.fast import pool

__all__ = ["Dm", "Lazy", "bounds_sum"]


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
        """Hand the store back for a later run (its touched bytes as they are: that run
        zeroes what it reaches) and forget it. Its pages never touched hold no memory yet
        (a fresh store is allocated zero, by the system on first touch): the pool counts
        the bytes some run touched."""
        data, self.data = self.data, np.zeros((self.slices, 0), np.uint8)
        if data.size:
            used = (self.rows, min(self.touched, data.shape[1]))
            pool.give_back(data, max(self.resident, used[0] * used[1]), used)
        self.touched = self.rows = self.dirty_rows = 0
        self.dirty = []
        self.lazy = []

    def _grow(self, need: int, rows: int | None = None, low: int = 0) -> None:
        """Offsets `low` up to `need` and slices up to `rows` (None: every slice) are about
        to be touched."""
        self._extend(need, rows)
        if self.dirty:
            self._clean(low, need, True)
        if self.lazy:
            self._materialize(low, need, self.slices)

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
        if self.lazy:
            self.lazy = [z for z in self.lazy if not (base <= z.lo and z.hi <= base + size and z.top <= slices)]

    def hold(self, region: Lazy) -> None:
        """Hold `region` lazily: its bytes are what its slices hold from now on (what an
        access reaches first is written out, `_grow`). Lazy regions it meets are written out
        first, so the regions never share a byte."""
        if self.lazy:
            met = [z for z in self.lazy if z.lo < region.hi and region.lo < z.hi and (z.which[region.slices] >= 0).any()]
            if met:
                self.lazy = [z for z in self.lazy if not any(z is m for m in met)]
                for z in met:
                    self._write_out(z)
        self._extend(region.hi, region.top)
        self.lazy.append(region)

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

    def _materialize(self, low: int, high: int, rows: int) -> None:
        """Write out the lazy regions that meet offsets [low, high) in the first `rows` slices."""
        kept = []
        for z in self.lazy:
            if z.lo < high and low < z.hi and z.first < rows:
                self._write_out(z)
            else:
                kept.append(z)
        self.lazy = kept

    def _write_out(self, z: Lazy) -> None:
        """Write a lazy region's bytes into the store."""
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
        `lazily(dm, base, size, slices)`: a shortcut that may hold the zeros as a lazy
        region instead (True when it did)."""
        if base >= self.touched:
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



def bounds_sum(base: np.ndarray, offs: np.ndarray, nbytes: int, limit: int, what: str, op: Any) -> None:
    """Every `base + offs` (broadcast) lies in [0, limit - nbytes]; checked on the parts."""
    if not (base.size and offs.size):
        return
    low = int(base.min()) + int(offs.min())
    high = int(base.max()) + int(offs.max())
    if low < 0 or high + nbytes > limit:
        raise InterpError(f"{what} touches bytes {low}..{high + nbytes - 1}, outside the {limit}-byte memory", op)
