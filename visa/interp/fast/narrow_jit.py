"""The Cast Engine's f32 -> bf16 narrowing in one compiled pass, for the interpreter's `cast_op`.

`narrow_rows` reads each row's first cells of f32 bits (any strides) and writes their bf16
bits straight into the packets of the cast's output: no temporaries, no copy of the
stream. Each cell takes `ir.float_bits.narrow_bf16`'s rule (docs/numerics.md): NaN ->
0x7FC0, zero and subnormal -> signed zero, else round to nearest even on the high half (a
carry steps the exponent, to infinity past the largest bf16), written as selects so the
loop vectorizes. It runs only when numba is already loaded in the process (a contraction
loaded it, `ir.exact_kernels.compile`): a cast alone never pays numba's import. It is the
shortcut on `run_cast`'s hook `narrow_bf16` (`visa.interp.shortcuts`).
This module imports nothing from numba.
"""

from __future__ import annotations

import numpy as np

from ir.exact_kernels import compile as kernels_compile
from visa.interp.shortcuts import register

__all__ = ["ORDER", "INLINE", "narrow_into"]


_U = np.uint32


def narrow_rows(src, out, n):
    """out[r, :n] = narrow_bf16(src[r, :n]) for uint32 `src`, uint16 `out`. Every step is
    held at 32 bits (numba widens integer sums to 64 bits otherwise: half the lanes a
    vector, 1.6x the time)."""
    for r in range(src.shape[0]):
        for c in range(n):
            x = src[r, c]
            a = _U(x & _U(0x7FFFFFFF))
            rounded = _U(_U(x + _U(_U(0x7FFF) + _U(_U(x >> _U(16)) & _U(1)))) >> _U(16))
            signed_zero = _U(_U(x >> _U(16)) & _U(0x8000))
            v = signed_zero if a < _U(0x800000) else rounded
            out[r, c] = np.uint16(_U(0x7FC0) if a > _U(0x7F800000) else v)


ORDER = ("narrow_rows",)
INLINE: tuple[str, ...] = ()


@register("narrow_bf16")
def narrow_into(cells: np.ndarray, out: np.ndarray) -> bool:
    """Write `narrow_bf16(cells)` into `out[:, :cells.shape[1]]` (both 2-D, the same rows)
    when numba is loaded in this process; False (nothing written) otherwise."""
    if not kernels_compile.loaded():
        return False
    kernels = kernels_compile.compiled(globals())
    if kernels is None:
        return False
    kernels["narrow_rows"](cells, out, cells.shape[1])
    return True
