"""When a bf16 contraction's sums cannot round: the bound the cpu backend and the VISA
interpreter both use to run such a contraction as float32 matmuls (issue 61 item 2; it
knows nothing of either).

The chip rounds every product and partial sum of a float contraction to float32 in its own
order (docs/numerics.md). A nonzero normal bf16 value m 2^e (m an integer of at most 8 bits)
is a multiple of its *unit*, the largest power of two dividing it. When every value of one
operand is a multiple of 2^ua and every value of the other of 2^uw, every product and every
sum of products, in any order and grouping, is a multiple of 2^(ua + uw); a multiple of 2^u
no larger than 2^(u + 24) in magnitude is a float32 exactly, and a normal one when
u >= -126. So when `terms` times the two largest magnitudes stays within 2^(ua + uw + 24)
(and below 2^127) nothing rounds, flushes or overflows, and every summation order gives the
exact sum's bits (`no_rounding`). NaN, infinities and subnormals (read as zeros by the chip)
are refused by `unit_floor`; a zero sum's sign is the caller's business (the chip's is +0).
"""

from __future__ import annotations

import numpy as np

__all__ = ["NONE", "from_bounds", "no_rounding", "unit_bounds", "unit_floor", "value"]

NONE = 1 << 14
"""The unit exponent of operands that are all zeros (every product is a zero)."""

_BLOCK = 1 << 14
"""Cells `unit_floor` masks at a time, into one small buffer (a temporary the size of a
large operand is fresh memory from the system on every run: 1-5 ms for 1 MiB, measured on
a drawn GEMM, against 0.2 ms for the passes themselves)."""


def from_bounds(top: int, low: int, ors: int, shift: int = 0) -> tuple[int, int] | None:
    """(largest magnitude pattern, a unit exponent no larger than the true smallest) from the
    largest and the smallest nonzero magnitude and the OR of all the magnitudes, each a bf16
    pattern shifted `shift` bits up (16 for widened float32 cells): the smallest value's
    exponent plus the fewest trailing zeros of any significand, both minima possibly of
    different values, so never above the true one. None for NaN, an infinity or a subnormal."""
    top, low = top >> shift, low >> shift
    if top >= 0x7F80 or low < 0x80:
        return None
    frac = (ors >> shift) & 0x7F | 0x80
    return top, (low >> 7) + (frac & -frac).bit_length() - 1 - 134


def unit_floor(cells: np.ndarray) -> tuple[int, int] | None:
    """`from_bounds` of bf16 patterns `cells` (uint16, or uint32 widened ones, pattern << 16)
    in a few plain passes a block at a time; (0, NONE) when every one is a zero."""
    shift = 16 if cells.dtype == np.uint32 else 0
    top, low, ors = unit_bounds(cells)
    if low == 1 << (16 + shift):
        return 0, NONE
    return from_bounds(top, low, ors, shift)


def unit_bounds(cells: np.ndarray) -> tuple[int, int, int]:
    """(largest, smallest nonzero, OR) of the magnitude patterns of bf16 patterns `cells`
    (uint16, or uint32 widened ones, pattern << 16), a block at a time; the smallest is
    `1 << 16` (`1 << 32` widened) when every one is a zero (or there are none)."""
    shift = 16 if cells.dtype == np.uint32 else 0
    kind, flat = cells.dtype.type, cells.reshape(-1)
    top, low, ors = 0, 1 << (16 + shift), 0
    if flat.size == 0:
        return top, low, ors
    mag = np.empty(min(flat.size, _BLOCK), flat.dtype)
    for lo in range(0, flat.size, _BLOCK):
        part = mag[:min(_BLOCK, flat.size - lo)]
        np.bitwise_and(flat[lo:lo + _BLOCK], kind(0x7FFF << shift), out=part)
        top = max(top, int(part.max()))
        ors |= int(np.bitwise_or.reduce(part))
        low = min(low, int(np.subtract(part, kind(1), out=part).min()) + 1)  # the smallest nonzero (a zero wraps)
    return top, low, ors


def no_rounding(a: tuple[int, int], w: tuple[int, int], terms: int) -> bool:
    """True when sums of at most `terms` products of values in the ranges `a` and `w`
    (`unit_floor`'s) are float32 numbers, normal or zero, in any order."""
    if a[1] == NONE or w[1] == NONE:
        return True  # every product is a zero
    unit = a[1] + w[1]
    top = value(a[0]) * value(w[0]) * terms
    return unit >= -126 and top <= 2.0 ** (unit + 24) and top < 2.0 ** 127


def value(pattern: int) -> float:
    """The float value of a bf16 magnitude pattern."""
    return float(np.array(pattern << 16, np.uint32).view(np.float32))
