"""Clip cluster and Logic cluster ops, on i32 and f32.

Clip: min, max, absolute min / max and adds. Logic: bitwise and / or / xor (on f32 the
bit patterns are combined) and, on i32, the three shifts, which compute exactly what
the Fxp cluster's shifts of the same name compute.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.numerics._arrays import as_f32, as_i32
from ir.vector.numerics.fp import add_f
from ir.vector.numerics.fxp import add_fxp, add_fxp_sat, arith_right_shift, left_shift, logic_right_shift

__all__ = ["min_i32", "max_i32", "abs_min_i32", "abs_max_i32", "min_f32", "max_f32",
           "abs_min_f32", "abs_max_f32", "bit_and", "bit_or", "bit_xor",
           "CLIP_I32_OPS", "CLIP_F32_OPS", "LOGIC_I32_OPS", "LOGIC_F32_OPS"]


def min_i32(a: Any, b: Any) -> np.ndarray:
    """Clip `Min` on i32: the smaller of a and b."""
    return np.minimum(as_i32(a), as_i32(b))


def max_i32(a: Any, b: Any) -> np.ndarray:
    """Clip `Max` on i32: the larger of a and b."""
    return np.maximum(as_i32(a), as_i32(b))


def _abs_pick(a: np.ndarray, b: np.ndarray, smaller: bool) -> np.ndarray:
    """a where |a| < |b| (smaller) or |a| > |b| (not smaller), else b; on ties, b."""
    wa, wb = np.abs(a.astype(np.int64)), np.abs(b.astype(np.int64))
    take_a = wa < wb if smaller else wa > wb
    return np.where(take_a, a, b).astype(np.int32)


def abs_min_i32(a: Any, b: Any) -> np.ndarray:
    """Clip `AbsMin` on i32: whichever of a, b has the smaller magnitude, b on a tie.

    |-2^31| is 2^31, the largest magnitude (design: the reference's host model takes
    `i32::abs`, which overflows there)."""
    return _abs_pick(*np.broadcast_arrays(as_i32(a), as_i32(b)), smaller=True)


def abs_max_i32(a: Any, b: Any) -> np.ndarray:
    """Clip `AbsMax` on i32: whichever of a, b has the larger magnitude, b on a tie
    (|-2^31| = 2^31, as for `AbsMin`)."""
    return _abs_pick(*np.broadcast_arrays(as_i32(a), as_i32(b)), smaller=False)


def _zero_sign(a: np.ndarray, b: np.ndarray, negative_if_both: bool) -> np.ndarray:
    sa, sb = np.signbit(a), np.signbit(b)
    neg = (sa & sb) if negative_if_both else (sa | sb)
    return np.where(neg, np.float32(-0.0), np.float32(0.0))


def max_f32(a: Any, b: Any) -> np.ndarray:
    """Clip `Max` on f32 (also the f32 reduce `Max`), Rust `f32::max`: the larger value;
    a NaN operand is ignored (max(NaN, x) = x; NaN only if both are NaN); of two zeros
    +0.0 is the larger (design: Rust leaves the sign of a zero result open)."""
    a32, b32 = np.broadcast_arrays(as_f32(a), as_f32(b))
    r = np.where(a32 > b32, a32, b32)
    r = np.where((a32 == 0) & (b32 == 0), _zero_sign(a32, b32, True), r)
    r = np.where(np.isnan(b32), a32, r)
    return np.where(np.isnan(a32), b32, r).astype(np.float32)


def min_f32(a: Any, b: Any) -> np.ndarray:
    """Clip `Min` on f32, Rust `f32::min`: the smaller value; a NaN operand is ignored;
    of two zeros -0.0 is the smaller (design)."""
    a32, b32 = np.broadcast_arrays(as_f32(a), as_f32(b))
    r = np.where(a32 < b32, a32, b32)
    r = np.where((a32 == 0) & (b32 == 0), _zero_sign(a32, b32, False), r)
    r = np.where(np.isnan(b32), a32, r)
    return np.where(np.isnan(a32), b32, r).astype(np.float32)


def abs_min_f32(a: Any, b: Any) -> np.ndarray:
    """Clip `AbsMin` on f32: a if |a| < |b|, else b (so b on a tie and whenever either
    is NaN, the comparison being false)."""
    a32, b32 = np.broadcast_arrays(as_f32(a), as_f32(b))
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(a32) < np.abs(b32), a32, b32).astype(np.float32)


def abs_max_f32(a: Any, b: Any) -> np.ndarray:
    """Clip `AbsMax` on f32: a if |a| > |b|, else b (b on a tie or a NaN)."""
    a32, b32 = np.broadcast_arrays(as_f32(a), as_f32(b))
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(a32) > np.abs(b32), a32, b32).astype(np.float32)


def _bits(x: Any) -> tuple[np.ndarray, bool]:
    arr = np.asarray(x)
    if arr.dtype == np.float32:
        return arr.view(np.int32), True
    return as_i32(arr), False


def _bitwise(fn: Any, a: Any, b: Any) -> np.ndarray:
    (ba, fa), (bb, fb) = _bits(a), _bits(b)
    if fa != fb:
        raise TypeError("a bitwise op combines two i32 or two f32 values, not one of each")
    r = np.asarray(fn(ba, bb), dtype=np.int32)
    return r.view(np.float32) if fa else r


def bit_and(a: Any, b: Any) -> np.ndarray:
    """Logic `BitAnd`: the bitwise and of the 32-bit patterns (i32 or f32, result alike)."""
    return _bitwise(np.bitwise_and, a, b)


def bit_or(a: Any, b: Any) -> np.ndarray:
    """Logic `BitOr`: the bitwise or of the 32-bit patterns."""
    return _bitwise(np.bitwise_or, a, b)


def bit_xor(a: Any, b: Any) -> np.ndarray:
    """Logic `BitXor`: the bitwise xor of the 32-bit patterns."""
    return _bitwise(np.bitwise_xor, a, b)


CLIP_I32_OPS = {"MIN": min_i32, "MAX": max_i32, "ABS_MIN": abs_min_i32, "ABS_MAX": abs_max_i32,
                "ADD_FXP": add_fxp, "ADD_FXP_SAT": add_fxp_sat}
CLIP_F32_OPS = {"MIN": min_f32, "MAX": max_f32, "ABS_MIN": abs_min_f32, "ABS_MAX": abs_max_f32, "ADD": add_f}
LOGIC_I32_OPS = {"BIT_AND": bit_and, "BIT_OR": bit_or, "BIT_XOR": bit_xor, "LEFT_SHIFT": left_shift,
                 "LOGIC_RIGHT_SHIFT": logic_right_shift, "ARITH_RIGHT_SHIFT": arith_right_shift}
LOGIC_F32_OPS = {"BIT_AND": bit_and, "BIT_OR": bit_or, "BIT_XOR": bit_xor}
