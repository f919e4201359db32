"""A commit's f32 -> bf16 cast (`F32_TO_BF16`, and its relu form) in a few in-place passes
over cache-sized blocks (hook "narrow_bf16" of visa/interp/shortcuts.py; issue 61 item 2).

The shared `ir.float_bits.narrow_bf16` spells the rule out case by case (round to nearest
even on the dropped half, a subnormal to its signed zero, NaN to 0x7FC0) with a fresh array
per step: 37 ms for 1 Mi cells at once, 8.7 ms a run of `drawn_s1_3` cast in blocks. Here a
block takes the usual bit trick, `(x + 0x7FFF + (x >> 16 & 1)) >> 16`, which is that rule for
every zero, normal and infinite value (a carry out of the significand steps the exponent, to
infinity past the largest bf16); the few cells it is not the rule for (subnormals and NaNs,
found by one compare each) are cast by `narrow_bf16` itself. The relu form then zeroes every
cell with its sign set that is not a NaN, as `ir.float_bits.commit_cast_relu` does.
"""

from __future__ import annotations

import numpy as np

from ir.float_bits import narrow_bf16
from visa.interp.shortcuts import register

__all__ = ["narrowed"]

_BLOCK = 1 << 15
"""Cells a block holds (its 128 KiB of temporaries stay in cache)."""
_SUB = 0x7FFFFF    # |x| - 1 below this: a subnormal (zero wraps around to the top)
_NAN = 0x7F800000  # |x| - 1 at or above this: a NaN


@register("narrow_bf16")
def narrowed(bits: np.ndarray, relu: bool) -> np.ndarray | None:
    """The bf16 codes (uint16) of f32 bit patterns `bits` (uint32), cast as a commit does
    (`relu`: `F32_TO_BF16_RELU`), or None for anything but uint32 (the plain cast then
    says what is wrong)."""
    if not isinstance(bits, np.ndarray) or bits.dtype != np.uint32:
        return None
    flat = np.ascontiguousarray(bits).reshape(-1)
    out = np.empty(flat.size, np.uint16)
    tmp = np.empty(min(flat.size, _BLOCK), np.uint32)
    for lo in range(0, flat.size, _BLOCK):
        x = flat[lo:lo + _BLOCK]
        t, o = tmp[:x.size], out[lo:lo + x.size]
        np.right_shift(x, 16, out=t)
        np.bitwise_and(t, 1, out=t)
        t += 0x7FFF
        t += x                  # below 2^32 but for NaNs, which are cast again below
        np.right_shift(t, 16, out=t)
        o[:] = t
        np.bitwise_and(x, 0x7FFFFFFF, out=t)
        t -= 1
        odd = (t < _SUB) | (t >= _NAN)
        if odd.any():
            at = np.flatnonzero(odd)
            o[at] = narrow_bf16(x[at])
        if relu:   # a negative non-NaN (every -0, subnormal, normal and -inf) is +0
            o[(x >= 0x80000000) & (x <= 0xFF800000)] = 0
    return out.reshape(bits.shape)
