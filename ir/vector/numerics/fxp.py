"""The eleven Fxp cluster ops on i32, exactly.

Every function takes two int32 arrays (or an array and a scalar; numpy broadcasting) and
returns int32. `a` is the first argument of the op after the argument mode is applied
(by default the stream), `b` the second (by default the operand). Shift ops read the
amount from `b`: a constant amount is refused outside 0 ... 31 when the kernel is
written; an amount computed at run time uses its low five bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.numerics._arrays import as_i32, saturate_i32, shift_amounts, wrap_i32

__all__ = ["add_fxp", "add_fxp_sat", "sub_fxp", "sub_fxp_sat", "left_shift", "left_shift_sat",
           "mul_fxp", "mul_int", "logic_right_shift", "arith_right_shift", "arith_right_shift_round",
           "FXP_OPS"]


def _wide(x: Any) -> np.ndarray:
    return as_i32(x).astype(np.int64)


def add_fxp(a: Any, b: Any) -> np.ndarray:
    """`AddFxp`: a + b modulo 2^32 (two's complement wrap-around)."""
    return wrap_i32(_wide(a) + _wide(b))


def add_fxp_sat(a: Any, b: Any) -> np.ndarray:
    """`AddFxpSat`: a + b clamped to [-2^31, 2^31 - 1]."""
    return saturate_i32(_wide(a) + _wide(b))


def sub_fxp(a: Any, b: Any) -> np.ndarray:
    """`SubFxp`: a - b modulo 2^32."""
    return wrap_i32(_wide(a) - _wide(b))


def sub_fxp_sat(a: Any, b: Any) -> np.ndarray:
    """`SubFxpSat`: a - b clamped to [-2^31, 2^31 - 1]."""
    return saturate_i32(_wide(a) - _wide(b))


def left_shift(a: Any, b: Any) -> np.ndarray:
    """`LeftShift`: a shifted left by s = b & 31 bits; bits above bit 31 are lost, so the
    result is a * 2^s modulo 2^32."""
    return wrap_i32(_wide(a) << shift_amounts(b))


def left_shift_sat(a: Any, b: Any) -> np.ndarray:
    """`LeftShiftSat`: a * 2^s clamped to [-2^31, 2^31 - 1], s = b & 31.

    For s <= 30 this is the reference's `a.saturating_mul(1 << s)`. At s = 31 the
    reference's host model multiplies by `1 << 31`, which is -2^31 in i32, so it flips
    the sign (1 -> -2^31); a saturating shift cannot do that, so here 1 << 31 saturates
    to 2^31 - 1 and -1 << 31 is exactly -2^31 (design)."""
    return saturate_i32(_wide(a) << shift_amounts(b))


def mul_fxp(a: Any, b: Any) -> np.ndarray:
    """`MulFxp`: the Q31 product of a and b (2^31 stands for 1.0), rounded to nearest
    with ties toward +infinity: ((a * b >> 30) + 1) >> 1 on the exact 64-bit product.
    The one product that overflows, (-2^31) * (-2^31), saturates to 2^31 - 1."""
    p = _wide(a) * _wide(b)
    return saturate_i32(((p >> 30) + 1) >> 1)


def mul_int(a: Any, b: Any) -> np.ndarray:
    """`MulInt`: a * b modulo 2^32 (the low 32 bits of the product)."""
    return wrap_i32(_wide(a) * _wide(b))


def logic_right_shift(a: Any, b: Any) -> np.ndarray:
    """`LogicRightShift`: the 32 bits of a shifted right by s = b & 31, zeros shifted in."""
    s = shift_amounts(b).astype(np.uint32)
    return (as_i32(a).view(np.uint32) >> s).astype(np.uint32).view(np.int32)


def arith_right_shift(a: Any, b: Any) -> np.ndarray:
    """`ArithRightShift`: floor(a / 2^s), s = b & 31 (the sign bit is shifted in)."""
    return (_wide(a) >> shift_amounts(b)).astype(np.int32)


def arith_right_shift_round(a: Any, b: Any) -> np.ndarray:
    """`ArithRightShiftRound`: a / 2^s rounded to nearest, ties toward +infinity, i.e.
    floor((a + 2^(s-1)) / 2^s) computed without overflow; s = b & 31, and s = 0 gives a.

    The reference's host model leaves this op unimplemented; the rounding is the one its
    `MulFxp` uses (add half, then shift), so the two ops agree (design)."""
    s = shift_amounts(b)
    half = (np.int64(1) << s) >> 1
    return ((_wide(a) + half) >> s).astype(np.int32)


FXP_OPS = {
    "ADD_FXP": add_fxp, "ADD_FXP_SAT": add_fxp_sat, "SUB_FXP": sub_fxp, "SUB_FXP_SAT": sub_fxp_sat,
    "LEFT_SHIFT": left_shift, "LEFT_SHIFT_SAT": left_shift_sat, "MUL_FXP": mul_fxp, "MUL_INT": mul_int,
    "LOGIC_RIGHT_SHIFT": logic_right_shift, "ARITH_RIGHT_SHIFT": arith_right_shift,
    "ARITH_RIGHT_SHIFT_ROUND": arith_right_shift_round,
}
