"""Scans of the fed codes for the interpreter's compiled float contraction
(`visa.interp.fast.contract_jit`): their range (which decides whether a sum can need a flush and
whether a code widens by a shift) and which rows repeat the row before them (a DMA's
copies of one row into consecutive slices, scanned and widened once).

`ORDER` is compiled by `contract_jit._compiled` (the same disk cache); this module imports
nothing from numba.
"""

from __future__ import annotations

import numpy as np

from ir.bf16_exact import NONE, from_bounds, unit_floor
from ir.exact_kernels import sums

__all__ = ["INLINE", "ORDER", "bf16_floor"]


def _row_range(row, mag, top, low):
    """(top, low) widened by the `mag`-masked codes of `row`: the largest, and the smallest
    nonzero one minus one (`mag` when every code is a zero: m - 1 wraps a zero past every
    other, and the minimum is clamped to `mag`). The two masks the kernels use (16-bit
    codes: `ir.exact_kernels.sums.bf16_bounds`, and 8-bit) are written as constants, each
    loop in the codes' own width: so the loops vectorize."""
    if mag == 0x7FFF:
        t16, l16 = sums.bf16_bounds(row, 0, row.size, 0, np.uint16(0), np.uint16(0xFFFF))
        return max(top, np.int64(t16)), min(low, np.int64(l16), np.int64(0x7FFF))
    if mag == 0x7F:
        t8, l8 = np.uint8(0), np.uint8(0xFF)
        for c in range(row.size):
            m8 = np.uint8(row[c]) & np.uint8(0x7F)
            t8 = max(t8, m8)
            l8 = min(l8, np.uint8(m8 - np.uint8(1)))   # a zero wraps to 0xFF
        return max(top, np.int64(t8)), min(low, np.int64(l8), np.int64(0x7F))
    for c in range(row.size):
        m = np.int64(row[c]) & mag
        top = max(top, m)
        low = min(low, (m + mag) & mag)
    return top, low


def _bounds(codes, mag):
    """The largest `mag`-masked code of `codes` (2-D) and the smallest nonzero one minus one
    (`mag` when every code is a zero)."""
    top, low = 0, mag
    for r in range(codes.shape[0]):
        top, low = _row_range(codes[r], mag, top, low)
    return top, low


def _same_row(words, r):
    """Whether rows r and r - 1 of `words` are equal: 512 words at a time, each block one
    vectorizable OR of XORs over slices, stopping at the first block that differs."""
    a, b, n = words[r], words[r - 1], words.shape[1]
    c0 = 0
    while c0 < n:
        m = min(512, n - c0)
        x, y = a[c0:c0 + m], b[c0:c0 + m]
        diff = np.uint64(0)
        for c in range(m):
            diff |= np.uint64(x[c] ^ y[c])
        if diff:
            return False
        c0 += m
    return True


def _held_rows(words, held):
    """held[r] set to the row whose codes row r repeats: held[r - 1] when row r equals row
    r - 1 (a DMA's copies of one row into consecutive slices; then not scanned again), else r.
    `words`: the rows as wider unsigned words."""
    for r in range(words.shape[0]):
        held[r] = held[r - 1] if r > 0 and _same_row(words, r) else r


def _held_bounds(codes, mag, held):
    """`_bounds` of the rows r with held[r] == r (the others hold the same codes as row
    held[r], which the caller knows)."""
    top, low = 0, mag
    for r in range(codes.shape[0]):
        if held[r] == r:
            top, low = _row_range(codes[r], mag, top, low)
    return top, low


def _bf16_floor(cells):
    """(largest, smallest nonzero less one, OR) of the bf16 magnitude codes of `cells` (1-D
    uint16: `ir.bf16_exact.unit_floor`'s three passes in one; the smallest wraps to 0xFFFF
    when every code is a zero)."""
    top, low, ors = np.uint16(0), np.uint16(0xFFFF), np.uint16(0)
    for c in range(cells.size):
        m = cells[c] & np.uint16(0x7FFF)
        top = max(top, m)
        low = min(low, np.uint16(m - np.uint16(1)))
        ors |= m
    return top, low, ors


def _wide_floor(cells):
    """`_bf16_floor` of widened bf16 values `cells` (1-D uint32, each a code 16 bits up: a TRF
    operand laid out for the matmuls), in their own width: the high halves' magnitudes, the
    low halves masked off as `ir.bf16_exact.unit_floor` masks them."""
    top, low, ors = np.uint32(0), np.uint32(0xFFFFFFFF), np.uint32(0)
    for c in range(cells.size):
        m = cells[c] & np.uint32(0x7FFF0000)
        top = max(top, m)
        low = min(low, np.uint32(m - np.uint32(1)))
        ors |= m
    return top, low, ors


ORDER = ("_row_range", "_bounds", "_same_row", "_held_rows", "_held_bounds", "_bf16_floor", "_wide_floor")
"""Compiled in this order."""
INLINE = ("_row_range", "_same_row")
"""Inlined into their callers: one row's scan and one row's compare."""


def bf16_floor(kernels: dict, codes: np.ndarray) -> tuple[int, int] | None:
    """`ir.bf16_exact.unit_floor` of bf16 codes (uint16, or uint32 widened ones) in one pass of
    the compiled `_bf16_floor` or `_wide_floor` (`kernels`: `contract_jit._compiled()`; a fifth
    of the numpy passes' time on a drawn GEMM's stream, a tenth on its widened weights); other
    codes by `unit_floor` itself."""
    wide = codes.dtype == np.uint32
    if not wide and codes.dtype != np.uint16:
        return unit_floor(codes)
    scan = kernels["_wide_floor" if wide else "_bf16_floor"]
    top, low, ors = (int(x) for x in scan(codes.reshape(-1)))
    if low == (0xFFFFFFFF if wide else 0xFFFF):   # every one a zero (a nonzero one less one is below)
        return 0, NONE
    return from_bounds(top, low + 1, ors, 16 if wide else 0)
