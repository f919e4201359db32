"""Checks of the scalar values a kernel writes into a Vector Engine op.

The engine holds two scalars, i32 and f32. A constant operand, a comparison boundary, a
constant shift amount and a conversion width are checked here, where the kernel writes
them; each refusal is a `VectorRuleError` (VE-CONST-*, VE-SHIFT-1, VE-CONV-1).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ir.vector.errors import refuse

__all__ = ["I32_MIN", "I32_MAX", "i32_constant", "f32_constant", "scalar_constant",
           "shift_amount", "int_width", "f32_exact_int"]

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _is_int(value: Any) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def i32_constant(value: Any, *, method: str | None = None) -> int:
    """`value` as a Python int in i32 range (VE-CONST-3 for a non-int, VE-CONST-1 out of range)."""
    if not _is_int(value):
        raise refuse("VE-CONST-3", f"an i32 operand must be an int, got {type(value).__name__} {value!r}",
                     method=method)
    v = int(value)
    if not I32_MIN <= v <= I32_MAX:
        raise refuse("VE-CONST-1", f"constant {v} does not fit i32 ({I32_MIN} ... {I32_MAX})",
                     help="wrap it yourself if a bit pattern is meant: ((v + 2**31) % 2**32) - 2**31",
                     method=method)
    return v


def f32_exact_int(value: int) -> bool:
    """Whether the integer `value` is exactly representable as an f32."""
    v = abs(int(value))
    if v == 0:
        return True
    shift = max(0, v.bit_length() - 24)
    return v % (1 << shift) == 0 and v.bit_length() <= 128


def f32_constant(value: Any, *, method: str | None = None) -> np.float32:
    """`value` rounded to the nearest f32 (ties to even). Ints must be exact in f32;
    a finite value whose rounding overflows is VE-CONST-2; NaN and infinities pass."""
    if _is_int(value):
        if not f32_exact_int(int(value)):
            raise refuse("VE-CONST-3", f"the int {int(value)} is not exactly representable in f32",
                         help="write it as a float to accept the rounding", method=method)
        return np.float32(int(value))
    if not isinstance(value, (float, np.floating)):
        raise refuse("VE-CONST-3", f"an f32 operand must be a float, got {type(value).__name__} {value!r}",
                     method=method)
    with np.errstate(over="ignore"):
        f = np.float32(value)
    if math.isfinite(float(value)) and not np.isfinite(f):
        raise refuse("VE-CONST-2", f"{float(value)!r} overflows f32 (largest finite is 3.4028235e38)",
                     method=method)
    return f


def scalar_constant(value: Any, scalar: str, *, method: str | None = None) -> Any:
    """An operand constant for a stream of `scalar` ("i32" or "f32")."""
    if scalar == "i32":
        return i32_constant(value, method=method)
    if scalar == "f32":
        return f32_constant(value, method=method)
    raise ValueError(f"the Vector Engine holds i32 and f32, not {scalar!r}")


def shift_amount(value: Any, *, method: str | None = None) -> int:
    """A constant shift amount: an int in 0 ... 31 (VE-SHIFT-1 otherwise)."""
    v = i32_constant(value, method=method)
    if not 0 <= v <= 31:
        raise refuse("VE-SHIFT-1", f"shift amount {v} is outside 0 ... 31", method=method)
    return v


def int_width(value: Any, *, method: str | None = None) -> int:
    """A fixed-point integer width for the fxp <-> fp conversions: an int in 0 ... 31."""
    if not _is_int(value):
        raise refuse("VE-CONV-1", f"int_width must be an int, got {type(value).__name__} {value!r}",
                     method=method)
    v = int(value)
    if not 0 <= v <= 31:
        raise refuse("VE-CONV-1", f"int_width {v} is outside 0 ... 31", method=method)
    return v
