"""The interpreter's memories, as bytes read and written by address (visa/visa.lark).

- **DM**: per `(chip, cluster)`, `max(SLICE_SIZES)` byte arrays of `DM_SLICE_BYTES`; the
  address of byte `b` of slice `s` is `s * DM_SLICE_BYTES + b`, exactly the DM address of
  a DMA command. DM starts zero; only the offsets touched so far are stored
  (visa/interp/dm.py).
- **TRF**: per `(chip, cluster)`, every slice's `TRF_BYTES` bytes, made of 32-byte rows
  (two banks interleaved: an even row starts a 64-byte bank pair), stored row-major as
  `(TRF_BYTES / 32, slices, 32)`: row `r` of every slice is one contiguous run, so a load
  or read of the same rows in many slices touches few pages. A TRF tensor of `L` lanes
  sees lane `l` as the `TRF_BYTES / L` bytes from `l * TRF_BYTES / L`.
- **HBM**: one byte array per tensor (`size(Chip)` copies of its element bytes).

`gather` / `scatter` move elements of any width (4-bit ones by nibble) at
`byte_base + element_index * bits / 8`; every address is bounds-checked, so a corrupt
stride or base reads or writes other bytes of the memory, or is refused, never crashes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.dtypes import DType
from visa.interp.fast.copies import CopyNotes
from visa.interp.errors import InterpError
from visa.interp.dm import Dm, Lazy, bounds_sum
from visa.interp.fast import pool
from visa.interp.values import from_raw, raw_dtype, to_raw

__all__ = ["Memory", "Flat", "Dm", "Lazy", "gather", "scatter", "copy_bytes"]


class Flat:
    """A plain byte-addressed memory (an HBM tensor, or the TRF of a cluster)."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data.reshape(-1)

    def locate(self, base: np.ndarray, offs: np.ndarray, width: int, what: str,
               op: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(byte array, row part, pattern part): the accesses of `width` bytes at
        `base + offs` (shapes broadcast) are at flat `row + pattern`, bounds-checked."""
        bounds_sum(base, offs, width, self.data.size, what, op)
        return self.data, base, offs


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
        self._trf_stale: dict[tuple[int, int], list[tuple[int, int]]] = {}   # rows an earlier run wrote
        self._trf_written: set[tuple[int, int, int, int, int]] = set()   # (chip, cluster, lanes, first, rows)
        self.dm_address: dict[int, int] = {}     # DM tensor id -> byte address (visa/visa.lark)
        self.trf_row: dict[int, int] = {}        # TRF tensor id -> first row (visa/visa.lark)
        self.dm_reserve = min(dm_reserve, self.dm_slice)
        self._scratch: list[np.ndarray] = []
        self.copies = CopyNotes()              # DM slices a DMA just filled alike (visa/interp/fast/copies.py)

    def dm(self, chip: int, cluster: int) -> Dm:
        """The DM of one (chip, cluster), all slices."""
        key = (int(chip), int(cluster))
        if key not in self._dm:
            self._dm[key] = Dm(self.slices, self.dm_slice, self.dm_reserve)
        return self._dm[key]

    def _trf_store(self, key: tuple[int, int]) -> np.ndarray:
        """The TRF store of `key`, a pooled one when there is one (its rows an earlier run
        wrote, as row ranges of every slice, in `_trf_stale` until `trf` zeroes them)."""
        if key not in self._trf:
            shape = (self.trf_bytes // self.row_bytes, self.slices, self.row_bytes)
            entry = pool.pooled_entry(shape, np.uint8, True)
            self._trf[key] = np.zeros(shape, np.uint8) if entry is None else entry[0]
            if entry is not None and entry[2] is not None:
                self._trf_stale[key] = list(entry[2][1])
        return self._trf[key]

    def trf(self, chip: int, cluster: int) -> np.ndarray:
        """The TRF bytes of one (chip, cluster): shape (TRF_BYTES / 32 rows, slices, 32), zero
        where no write of this run reached."""
        key = (int(chip), int(cluster))
        data = self._trf_store(key)
        stale = self._trf_stale.get(key)
        if stale:
            for lo, hi in stale:
                data[lo:hi] = 0
            stale.clear()       # only once zero: a reader never sees the rows half done
        return data

    def trf_lanes(self, chip: int, cluster: int, lanes: int) -> np.ndarray:
        """The same TRF bytes seen by a tensor of `lanes` lanes: (lanes, rows per lane, slices, 32)."""
        return self.trf(chip, cluster).reshape(lanes, -1, self.slices, self.row_bytes)

    def lane_rows(self, lanes: int, first: int, rows: int) -> list[tuple[int, int]]:
        """Rows `first .. first + rows - 1` of every lane as row ranges of the whole TRF."""
        per = self.trf_bytes // self.row_bytes // lanes
        return [(lane * per + first, lane * per + first + rows) for lane in range(lanes)]

    def trf_rows(self, chip: int, cluster: int, lanes: int, first: int, rows: int,
                 every_slice: bool = False) -> np.ndarray:
        """Rows `first .. first + rows - 1` of every lane, every slice, to write into:
        (lanes, rows, slices, 32). Every write of non-zero bytes goes through here, so
        `release` knows which rows the next run must zero. `every_slice`: the caller writes
        every byte of those rows in every slice, so what an earlier run left there need
        not be zeroed first."""
        key = (int(chip), int(cluster))
        self._trf_written.add((*key, lanes, first, rows))
        for lo, hi in self.lane_rows(lanes, first, rows):
            self.copies.forget(("trf", *key), lo, hi)
        if every_slice:
            self._trf_store(key)
            stale = self._trf_stale.get(key, [])
            for lo, hi in self.lane_rows(lanes, first, rows):
                stale = [r for a, b in stale for r in ((a, min(b, lo)), (max(a, hi), b)) if r[0] < r[1]]
            self._trf_stale[key] = stale
        return self.trf_lanes(chip, cluster, lanes)[:, first:first + rows]

    def scratch(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised array the caller overwrites entirely, owned by this run until
        `release` (reused from an earlier run when one of that shape is pooled)."""
        entry = pool.pooled_entry(shape, dtype)
        data = np.empty(shape, dtype) if entry is None else entry[0]
        self._scratch.append(data)
        return data

    def recycle(self) -> None:
        """A program is over: the scratch arrays its streams used go back to the pool (a
        program's result holds none of them: DM addresses, TRF rows, copied VRF words)."""
        for data in self._scratch:
            pool.give_back(data, None, pool.ANY)
        self._scratch.clear()

    def release(self) -> None:
        """The run is over: its DM stores and scratch arrays go back to the pool (nothing
        may read them after)."""
        for dm in self._dm.values():
            dm.release()
        self._dm.clear()
        written: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for chip, cluster, lanes, first, rows in self._trf_written:
            written.setdefault((chip, cluster), []).extend(self.lane_rows(lanes, first, rows))
        self._trf_written.clear()
        for key, data in self._trf.items():    # its written rows zeroed by the next run's `trf`
            pool.give_back(data, None, ("rows", tuple(written.get(key, ()))) if key in written else None)
        self._trf.clear()
        self._trf_stale.clear()
        self.recycle()

    def zero_dm(self, parts: list[tuple[int, int]], slices: int, base: int, size: int, op: Any = None,
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


def _space(mem: Any) -> Any:
    return mem if hasattr(mem, "locate") else Flat(mem)


def _flat(row: np.ndarray, pattern: np.ndarray, width: int) -> tuple[np.ndarray, bool]:
    """Flat addresses `row + pattern` in units of `width` bytes when both parts are aligned
    (then the memory is read as a typed view), else in bytes."""
    if width > 1 and not (row % width).any() and not (pattern % width).any():
        return row // width + pattern // width, True
    return row + pattern, width == 1


def gather(mem: Any, byte_base: Any, index: np.ndarray, d: DType, bits: int, op: Any = None,
           what: str = "a read") -> np.ndarray:
    """Values of `d` at `byte_base + index * bits / 8` of a memory (a `Dm`, `Flat` or byte
    array); `byte_base` (per row) broadcasts against `index` (the access pattern)."""
    space = _space(mem)
    base = np.asarray(byte_base, np.int64)
    index = np.asarray(index, np.int64)
    if bits == 4:
        nib = base * 2 + index
        buf, row, pat = space.locate(nib >> 1, np.zeros((), np.int64), 1, what, op)
        raw = (buf[row + pat] >> ((nib & 1) * 4).astype(np.uint8)) & 0xF
        return from_raw(raw, d, 4)
    width = bits // 8
    buf, row, pat = space.locate(base, index * width, width, what, op)
    addr, typed = _flat(row, pat, width)
    if typed:
        raw = (buf if width == 1 else buf.view(raw_dtype(bits)))[addr]
    else:  # unaligned: assemble the little-endian bytes
        raw = np.zeros(addr.shape, np.uint64)
        for k in range(width):
            raw |= buf[addr + k].astype(np.uint64) << np.uint64(8 * k)
        raw = raw.astype(raw_dtype(bits))
    return from_raw(raw, d, bits)


def scatter(mem: Any, byte_base: Any, index: np.ndarray, values: np.ndarray, d: DType, bits: int,
            op: Any = None, what: str = "a write") -> None:
    """Write `values` of `d` at `byte_base + index * bits / 8` of a memory (shapes broadcast)."""
    space = _space(mem)
    base = np.asarray(byte_base, np.int64)
    index = np.asarray(index, np.int64)
    shape = np.broadcast_shapes(base.shape, index.shape)
    raw = np.broadcast_to(to_raw(values, d, bits), shape).reshape(-1)
    if bits == 4:
        nib = np.broadcast_to(base * 2 + index, shape).reshape(-1)
        buf, row, pat = space.locate(nib >> 1, np.zeros((), np.int64), 1, what, op)
        addr = row + pat
        shift = ((nib & 1) * 4).astype(np.uint8)
        np.bitwise_and.at(buf, addr, ~(np.uint8(0xF) << shift))
        np.bitwise_or.at(buf, addr, (raw.astype(np.uint8) & 0xF) << shift)
        return
    width = bits // 8
    buf, row, pat = space.locate(base, index * width, width, what, op)
    addr, typed = _flat(row, pat, width)
    addr = np.broadcast_to(addr, shape).reshape(-1)
    if typed:
        (buf if width == 1 else buf.view(raw_dtype(bits)))[addr] = raw
    else:
        wide = raw.astype(np.uint64)
        for k in range(width):
            buf[addr + k] = ((wide >> np.uint64(8 * k)) & 0xFF).astype(np.uint8)


def copy_bytes(src: Any, src_addr: tuple[np.ndarray, np.ndarray], dst: Any, dst_addr: tuple[np.ndarray, np.ndarray],
               op: Any = None, what: str = "the DMA") -> None:
    """Byte `dst_addr` of `dst` takes byte `src_addr` of `src` (a DMA's byte walk); each
    address is a pair (outer walk, packet offsets) whose broadcast sum is the address."""
    sbuf, srow, spat = _space(src).locate(*src_addr, 1, f"{what} source", op)
    dbuf, drow, dpat = _space(dst).locate(*dst_addr, 1, f"{what} destination", op)
    dbuf[drow + dpat] = sbuf[srow + spat]
