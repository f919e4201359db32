"""Contraction Engine arithmetic with the chip's exact semantics (docs/numerics.md, docs/numerics.md).

f32 multiplies and adds are IEEE binary32 round-to-nearest-even followed by a flush of
subnormals to zero and a canonical NaN; i32 multiplies and adds wrap modulo 2^32; the
Packet Reducer sums adjacent pairs level by level.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ir.convert import F32_NAN

__all__ = ["ftz_f32", "fmul", "fadd", "tree_sum_f32"]

_U32 = np.uint32


def _f32(x: object) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype != np.float32:
        raise TypeError(f"expected float32 values, got {arr.dtype}")
    return arr


def _ftz_in_place(x: np.ndarray) -> np.ndarray:
    """ftz_f32 on a writable float32 array, in place (three passes over its bits)."""
    b = x.view(_U32)
    mag = b & _U32(0x7FFFFFFF)
    np.bitwise_and(b, _U32(0x80000000), out=b, where=mag < _U32(0x00800000))  # exponent 0
    np.copyto(b, F32_NAN, where=mag > _U32(0x7F800000))
    return x


def ftz_f32(values: object) -> np.ndarray:
    """Flush |x| < 2^-126 to a zero of its sign and make every NaN 0x7FC00000 (float32)."""
    return _ftz_in_place(np.array(_f32(values), dtype=np.float32, copy=True))


def fmul(a: object, b: object) -> np.ndarray:
    """One Contraction Engine f32 multiply: IEEE RNE, then ftz_f32 (operands come pre-flushed)."""
    with np.errstate(all="ignore"):  # inf * 0 and overflow are defined results here
        return _ftz_in_place(np.asarray(np.multiply(_f32(a), _f32(b))))


def fadd(a: object, b: object) -> np.ndarray:
    """One Contraction Engine f32 add: IEEE binary32 RNE, then ftz_f32."""
    with np.errstate(all="ignore"):
        return _ftz_in_place(np.asarray(np.add(_f32(a), _f32(b))))


def _tree(leaves: np.ndarray, axis: int, add: Callable[[object, object], np.ndarray]) -> np.ndarray:
    """Adjacent-pair adder tree over `axis` (docs/machine/contraction.md), level by level."""
    v = np.moveaxis(leaves, axis, -1)
    n = v.shape[-1]
    if n == 0 or n & (n - 1):
        raise ValueError(f"tree reduction needs a power-of-two leaf count, got {n}")
    while v.shape[-1] > 1:
        v = add(v[..., 0::2], v[..., 1::2])
    return v[..., 0]


def tree_sum_f32(leaves: object, axis: int = -1) -> np.ndarray:
    """Adjacent-pair tree sum of float32 leaves, each add an fadd (with flush)."""
    return _tree(_f32(leaves), axis, fadd)
