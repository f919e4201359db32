"""One step of the intra-slice chain on stored values, shared by the cpu backend and the
VISA interpreter (which both keep i32 as int32 values and f32 as uint32 bit patterns).

A step is `(unit, op, arg)`: `unit` names the stage and the scalar (`FXP`, `CLIP_I32`,
`CLIP_F32`, `FXP_TO_FP`, `FP_TO_FXP`, `TAG`, and on the 4-way float path `NARROW_TRIM`,
`FP_UNARY`, `FP_BINARY`, `WIDEN_PAD`), `op` the op's variant name (`MUL_INT`, `MAX`, `EXP`;
a multiply names its ALU, `MUL_F_MUL0`; `NONE` for a conversion or a way change, `ZERO`
for the tag), `arg` the constant operand (an i32 value, or the bit pattern of an f32
constant) or the conversion's int_width. A unit ending in `_RF` (`FXP_RF`, `CLIP_I32_RF`,
`CLIP_F32_RF`, `FP_BINARY_RF`) is the same op reading its operand from the register file:
`operand` holds one stored value per stream cell and `arg` is 0. `NARROW_TRIM` on an 8-cell packet zeroes the
back four cells (the trimmed lanes); `WIDEN_PAD` leaves the values as they are.
"""

from __future__ import annotations

import numpy as np

from ir.vector.numerics.clip_logic import CLIP_F32_OPS, CLIP_I32_OPS
from ir.vector.numerics.conversions import fp_to_fxp, fxp_to_fp
from ir.vector.numerics.fp import FP_BINARY_OPS
from ir.vector.numerics.fxp import FXP_OPS
from ir.vector.numerics.transcendental import FP_UNARY_OPS

__all__ = ["UNITS", "run_step", "f32_bits", "unit_scalars"]

# unit -> (input scalar, output scalar)
UNITS: dict[str, tuple[str, str]] = {
    "TAG": ("any", "same"), "FXP": ("i32", "i32"), "CLIP_I32": ("i32", "i32"), "CLIP_F32": ("f32", "f32"),
    "FXP_TO_FP": ("i32", "f32"), "FP_TO_FXP": ("f32", "i32"),
    "NARROW_TRIM": ("any", "same"), "FP_UNARY": ("f32", "f32"), "FP_BINARY": ("f32", "f32"),
    "WIDEN_PAD": ("any", "same"), "INTRA_REDUCE_I32": ("i32", "i32"), "INTRA_REDUCE_F32": ("f32", "f32"),
    "FXP_RF": ("i32", "i32"), "CLIP_I32_RF": ("i32", "i32"), "CLIP_F32_RF": ("f32", "f32"),
    "FP_BINARY_RF": ("f32", "f32"),
}
_STORED = {"i32": np.dtype(np.int32), "f32": np.dtype(np.uint32)}


def unit_scalars(unit: str) -> tuple[str, str]:
    """(input, output) scalar of a unit (KeyError for an unknown unit)."""
    return UNITS[unit]


def f32_bits(value: float) -> int:
    """The bit pattern (0 ... 2**32 - 1) of the f32 nearest `value`."""
    return int(np.array(value, np.float32).view(np.uint32))


def _f32(bits: np.ndarray) -> np.ndarray:
    return bits.view(np.float32)


def _rf_operand(unit: str, values: np.ndarray, operand: np.ndarray | None) -> np.ndarray:
    """The register-file operand of an `_RF` step: one stored value per stream cell."""
    if operand is None or operand.shape != values.shape or operand.dtype != values.dtype:
        got = "none" if operand is None else f"{operand.shape} {operand.dtype}"
        raise ValueError(f"a {unit} step reads a register-file operand shaped like the stream "
                         f"{values.shape} {values.dtype}, not {got}")
    return operand


def run_step(unit: str, op: str, arg: int, values: np.ndarray, operand: np.ndarray | None = None) -> np.ndarray:
    """The step applied to stored values (int32 for i32, uint32 bits for f32); `operand` is
    the register-file operand of an `_RF` unit."""
    if unit == "TAG" or unit == "WIDEN_PAD":
        return values
    if unit == "NARROW_TRIM":
        out = np.array(values, copy=True)
        out[..., 4:] = 0
        return out
    src, _ = UNITS[unit]
    if values.dtype != _STORED[src]:
        raise TypeError(f"a {unit} step reads {src} values, not {values.dtype}")
    if unit.endswith("_RF"):
        rhs = _rf_operand(unit, values, operand)
        unit = unit[:-3]
    else:
        rhs = np.array(arg, _STORED[src])
    if unit == "FXP":
        return FXP_OPS[op](values, rhs)
    if unit == "CLIP_I32":
        return CLIP_I32_OPS[op](values, rhs)
    if unit == "CLIP_F32":
        return CLIP_F32_OPS[op](_f32(values), _f32(rhs)).view(np.uint32)
    if unit == "FXP_TO_FP":
        return fxp_to_fp(values, arg).view(np.uint32)
    if unit == "FP_TO_FXP":
        return fp_to_fxp(_f32(values), arg)
    if unit == "FP_UNARY":
        return FP_UNARY_OPS[op](_f32(values)).view(np.uint32)
    if unit == "FP_BINARY":
        fn = FP_BINARY_OPS["MUL_F" if op.startswith("MUL_F") else op]
        return fn(_f32(values), _f32(rhs)).view(np.uint32)
    if unit == "NARROW_TRIM":
        out = np.array(values, copy=True)
        out[..., 4:] = 0
        return out
    if unit == "WIDEN_PAD":
        return values
    raise KeyError(unit)
