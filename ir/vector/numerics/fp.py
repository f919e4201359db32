"""Float cluster and FpDiv arithmetic on f32: add, subtract, multiply, divide, fused
multiply-add.

IEEE 754 binary32, round to nearest, ties to even, as the reference's host model computes
with Rust `f32` operators: subnormal inputs and results are kept (the reference states
no flush for the Vector Engine), infinities and NaNs follow IEEE (inf - inf, 0 * inf and
0 / 0 are NaN; x / 0 is a signed infinity). Every NaN result is the canonical 0x7FC00000
(`canonical_nan`), whatever the host and the operands' NaN payloads. The multiplier ALU of
`MulF` does not change the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.numerics._arrays import as_f32, canonical_nan

__all__ = ["add_f", "sub_f", "mul_f", "div_f", "fma_f", "FP_BINARY_OPS"]


def _ieee(ufunc: np.ufunc, a: Any, b: Any) -> np.ndarray:
    with np.errstate(all="ignore"):  # overflow, inf - inf, 0 / 0: defined IEEE results here
        return canonical_nan(ufunc(as_f32(a), as_f32(b), dtype=np.float32))


def add_f(a: Any, b: Any) -> np.ndarray:
    """`AddF` (and the clip `Add`): a + b in f32."""
    return _ieee(np.add, a, b)


def sub_f(a: Any, b: Any) -> np.ndarray:
    """`SubF`: a - b in f32."""
    return _ieee(np.subtract, a, b)


def mul_f(a: Any, b: Any) -> np.ndarray:
    """`MulF(alu)`: a * b in f32, whichever ALU runs it."""
    return _ieee(np.multiply, a, b)


def div_f(a: Any, b: Any) -> np.ndarray:
    """`DivF` (Float cluster and FpDiv stage): a / b in f32."""
    return _ieee(np.divide, a, b)


def fma_f(a: Any, b: Any, c: Any) -> np.ndarray:
    """`FmaF`: a * b + c with one rounding (Rust `f32::mul_add`).

    Exact method: a * b is exact in float64; the sum with c is computed in float64 with
    its rounding error recovered (TwoSum), then rounded to odd, which makes the final
    rounding to f32 a correct single rounding of the exact a * b + c."""
    a32, b32, c32 = np.broadcast_arrays(as_f32(a), as_f32(b), as_f32(c))
    with np.errstate(all="ignore"):
        p = a32.astype(np.float64) * b32.astype(np.float64)
        c64 = c32.astype(np.float64)
        s = p + c64
        bp = s - c64
        err = (p - bp) + (c64 - (s - bp))
        odd = (s.view(np.uint64) & np.uint64(1)) == 1
        nudge = np.isfinite(s) & (err != 0) & ~odd
        s = np.where(nudge, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        return canonical_nan(s.astype(np.float32))


FP_BINARY_OPS = {"ADD_F": add_f, "SUB_F": sub_f, "MUL_F": mul_f, "DIV_F": div_f}
