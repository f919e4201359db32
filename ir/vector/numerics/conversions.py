"""The value conversions between i32 fixed point and f32.

A fixed-point value with integer width w (0 ... 31) is an i32 `x` standing for
x * 2^(w - 31): 31 - w fraction bits. w = 31 is the plain integer conversion.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.numerics._arrays import as_f32, as_i32
from ir.vector.scalars import int_width as _check_width

__all__ = ["fxp_to_fp", "fp_to_fxp"]


def fxp_to_fp(x: Any, int_width: int) -> np.ndarray:
    """`vector_fxp_to_fp(int_width)`: x * 2^(int_width - 31) rounded to the nearest f32,
    ties to even. Zero gives +0.0; results are never subnormal (the smallest magnitude is
    2^-31) and never overflow."""
    w = _check_width(int_width)
    x64 = as_i32(x).astype(np.float64)  # exact: 32-bit integers fit float64
    return (x64 * 2.0 ** (w - 31)).astype(np.float32)  # exact scaling, then one rounding


def fp_to_fxp(x: Any, int_width: int) -> np.ndarray:
    """`vector_fp_to_fxp(int_width)`: x * 2^(31 - int_width) rounded to the nearest
    integer, ties away from zero, then clamped to [-2^31, 2^31 - 1]. +-inf clamp to the
    ends; NaN gives 2^31 - 1 when its sign bit is clear and -2^31 when it is set."""
    w = _check_width(int_width)
    x32 = as_f32(x)
    with np.errstate(all="ignore"):
        v = x32.astype(np.float64) * 2.0 ** (31 - w)  # exact: f32 times a power of two
        t = np.trunc(v)
        r = t + np.where(np.abs(v - t) >= 0.5, np.sign(v), 0.0)
        r = np.clip(r, -(2.0**31), 2.0**31 - 1)
    nan = np.isnan(x32)
    r = np.where(nan, 0.0, r).astype(np.int64)
    r = np.where(nan & ~np.signbit(x32), 2**31 - 1, r)
    r = np.where(nan & np.signbit(x32), -(2**31), r)
    return r.astype(np.int32)
