"""Reads and writes of the interpreter's memories by address: `gather` / `scatter` of
elements and `copy_bytes` of a DMA's byte walk (visa/interp/memory.py holds the memories).

`gather` / `scatter` move elements of any width (4-bit ones by nibble) at
`byte_base + element_index * bits / 8`; every address is bounds-checked (`bounds_sum`), so a
corrupt stride or base reads or writes other bytes of the memory, or is refused, never
crashes. A memory is a `Dm`, `Flat` or byte array (anything with `locate`, or an array).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.dtypes import DType
from visa.interp.errors import InterpError
from visa.interp.values import from_raw, raw_dtype, to_raw

__all__ = ["Flat", "bounds_sum", "gather", "scatter", "copy_bytes"]


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


def bounds_sum(base: np.ndarray, offs: np.ndarray, nbytes: int, limit: int, what: str, op: Any) -> None:
    """Every `base + offs` (broadcast) lies in [0, limit - nbytes]; checked on the parts."""
    if not (base.size and offs.size):
        return
    low = int(base.min()) + int(offs.min())
    high = int(base.max()) + int(offs.max())
    if low < 0 or high + nbytes > limit:
        raise InterpError(f"{what} touches bytes {low}..{high + nbytes - 1}, outside the {limit}-byte memory", op)


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
