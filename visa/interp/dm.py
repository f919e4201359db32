"""The interpreter's DM of one (chip, cluster) as bytes read and written by address: `Dm`,
with the broadcasts it holds lazily (`Lazy`, visa/interp/fast/lazy.py) until a write meets
them. The address of byte `b` of slice `s` is `s * DM_SLICE_BYTES + b`, exactly the DM
address of a DMA command; DM starts zero and only the offsets touched so far are stored."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from visa.interp.access import bounds_sum
from visa.interp.fast import pool

__all__ = ["Dm", "Lazy"]


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
        if z.rows.flags.c_contiguous:
            view = np.ndarray((z.rows.shape[0], *shape), dtype, buffer=z.rows, offset=lo - z.lo,
                              strides=(z.rows.strides[0], *strides))
        else:   # a region cut from a larger one (`_outside`): a view of its rows, columns apart
            first = z.rows[:, lo - z.lo:lo - z.lo + np.dtype(dtype).itemsize].view(dtype)   # each row's first element
            view = as_strided(first, (z.rows.shape[0], *shape), (z.rows.strides[0], *strides), writeable=False)
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
        self._write_out(Lazy(lo, hi, z.slices, z.which, z.rows[:, lo - z.lo:hi - z.lo], (z.first, z.top)))
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

    def __init__(self, lo: int, hi: int, slices: np.ndarray, which: np.ndarray, rows: np.ndarray,
                 bounds: tuple[int, int] | None = None) -> None:
        self.lo, self.hi, self.slices, self.which, self.rows = lo, hi, slices, which, rows
        # the first slice and one past the last (`bounds`: a part of a region, its slices the same)
        self.first, self.top = (int(slices.min()), int(slices.max()) + 1) if bounds is None else bounds


def _outside(z: Lazy, low: int, high: int) -> list[Lazy]:
    """The parts of lazy region `z` outside offsets [low, high) (none, one or two; `z`
    itself when it does not meet them)."""
    if high <= z.lo or z.hi <= low:
        return [z]
    return [Lazy(a, b, z.slices, z.which, z.rows[:, a - z.lo:b - z.lo], (z.first, z.top))   # views: no copy
            for a, b in ((z.lo, low), (high, z.hi)) if a < b]
