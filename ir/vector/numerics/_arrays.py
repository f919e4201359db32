"""Input coercion shared by the numerics modules: the engine holds int32 and float32 only."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_i32", "as_f32", "wrap_i32", "saturate_i32", "shift_amounts", "U32_MASK", "canonical_nan",
           "F32_NAN_BITS", "f32_bits"]

U32_MASK = np.int64(0xFFFFFFFF)
F32_NAN_BITS = np.uint32(0x7FC00000)
"""The one NaN the engine's arithmetic produces (docs/numerics.md), as the contractions do."""


def canonical_nan(x: Any) -> np.ndarray:
    """The float32 array `x` with every NaN replaced by `F32_NAN_BITS` (`x` itself, not a
    copy, when it is a float32 array without NaN: callers pass results they own).

    An IEEE operation that makes a NaN (inf - inf, 0 * inf, sqrt(-1)) gives the host FPU's
    default NaN, 0xFFC00000 on x86 and 0x7FC00000 on ARM, and a NaN operand's payload
    passes on or not by the host's rules; the engine's arithmetic results pass through
    here so that neither backend depends on the host."""
    arr = np.asarray(x, dtype=np.float32)
    nan = np.isnan(arr)
    if not nan.any():
        return arr
    bits = arr.view(np.uint32).copy()
    bits[nan] = F32_NAN_BITS
    return bits.view(np.float32)


def f32_bits(value: float) -> int:
    """The bit pattern (0 ... 2**32 - 1) of the f32 nearest `value`."""
    return int(np.array(value, np.float32).view(np.uint32))


def as_i32(x: Any) -> np.ndarray:
    """`x` as an int32 array: int32 arrays as they are, Python / numpy ints if in range."""
    arr = np.asarray(x)
    if arr.dtype == np.int32:
        return arr
    if arr.dtype.kind in "iu" and arr.size and (arr.min() < -(2**31) or arr.max() > 2**31 - 1):
        raise ValueError("the Vector Engine holds i32: values out of range")
    if arr.dtype.kind in "iu":
        return arr.astype(np.int32)
    raise TypeError(f"expected int32 values, got {arr.dtype}")


def as_f32(x: Any) -> np.ndarray:
    """`x` as a float32 array: float32 arrays as they are, Python floats rounded to f32."""
    arr = np.asarray(x)
    if arr.dtype == np.float32:
        return arr
    if arr.dtype == np.float64 and arr.ndim == 0:
        with np.errstate(over="ignore"):
            return arr.astype(np.float32)
    raise TypeError(f"expected float32 values, got {arr.dtype}")


def wrap_i32(x: np.ndarray) -> np.ndarray:
    """An int64 array reduced modulo 2^32 into int32 (two's complement)."""
    return (np.asarray(x, np.int64) & U32_MASK).astype(np.uint32).view(np.int32)


def saturate_i32(x: np.ndarray) -> np.ndarray:
    """An int64 array clamped to the int32 range."""
    return np.clip(np.asarray(x, np.int64), -(2**31), 2**31 - 1).astype(np.int32)


def shift_amounts(b: Any) -> np.ndarray:
    """The shift amount each element uses: the low five bits of the i32 operand, as int64.

    A constant amount is checked to lie in 0 ... 31 where the kernel writes it (VE-SHIFT-1);
    an amount computed at run time (a VRF or stream operand) uses its low five bits."""
    return (as_i32(b).astype(np.int64) & 31)
