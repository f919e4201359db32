"""One step of the intra-slice chain on stored values, shared by the cpu backend and the
VISA interpreter (which both keep i32 as int32 values and f32 as uint32 bit patterns).

A step is `(unit, op, arg)`: `unit` names the stage and the scalar (`FXP`, `CLIP_I32`,
`CLIP_F32`, `FXP_TO_FP`, `FP_TO_FXP`, `TAG`, and on the 4-way float path `NARROW_TRIM`,
`FP_UNARY`, `FP_BINARY`, `WIDEN_PAD`), `op` the op's variant name (`MUL_INT`, `MAX`, `EXP`;
a multiply names its ALU, `MUL_F_MUL0`; `NONE` for a conversion or a way change, `ZERO`
for the tag), `arg` the constant operand (an i32 value, or the bit pattern of an f32
constant) or the conversion's int_width. A unit ending in `_RF` (`FXP_RF`, `CLIP_I32_RF`,
`CLIP_F32_RF`, `FP_BINARY_RF`, `FP_DIV_RF`) is the same op reading its operand from the register file:
`operand` holds one stored value per stream cell and `arg` is 0. `NARROW_TRIM` on an 8-cell packet zeroes the
back four cells (the trimmed lanes); `WIDEN_PAD` leaves the values as they are.

The element-wise units added with the full chain: `LOGIC_I32` / `LOGIC_F32` (bitwise ops
and, on i32, the shifts), `FP_TERNARY` (`FMA_F`, `arg` the first operand's bits, `arg1` the
second's), `FP_DIV` (`DIV_F`), `REINTERPRET` (op `TO_I32` / `TO_F32`: the bits reread),
and the way changes `NARROW_SPLIT` / `WIDEN_CONCAT`, which move cells between the packet
and the innermost time step: on values shaped (..., T, 8) the split gives (..., 2T, 8)
holding each flit's front four then its back four (back lanes zero), the concat the
inverse. `mode` names the argument mode (`DEFAULT` is MODE01 / MODE012, see
`ir.vector.numerics.modes`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.enums import BinaryArgMode, TernaryArgMode
from ir.vector.numerics._arrays import f32_bits
from ir.vector.numerics.unit_runs import run_elementwise
from ir.vector.units import UNITS, is_rf, spec_of
from ir.words import a_an

__all__ = ["UNITS", "run_step", "f32_bits", "mode_enum"]

_STORED = {"i32": np.dtype(np.int32), "f32": np.dtype(np.uint32)}


def _rf_operand(unit: str, values: np.ndarray, operand: np.ndarray | None) -> np.ndarray:
    """The register-file operand of an `_RF` step: one stored value per stream cell."""
    if operand is None or operand.shape != values.shape or operand.dtype != values.dtype:
        got = "none" if operand is None else f"{operand.shape} {operand.dtype}"
        raise ValueError(f"{a_an(unit)} step reads a register-file operand shaped like the stream "
                         f"{values.shape} {values.dtype}, not {got}")
    return operand


def mode_enum(mode: str | None) -> Any:
    """The argument mode enum value named `mode` (None for the default, MODE01 / MODE012)."""
    if mode in (None, "DEFAULT"):
        return None
    return getattr(BinaryArgMode, mode, None) or getattr(TernaryArgMode, mode)


def run_step(unit: str, op: str, arg: int, values: np.ndarray, mode: str | None = None,
             arg1: int = 0, operand: np.ndarray | None = None) -> np.ndarray:
    """The step applied to stored values (int32 for i32, uint32 bits for f32). A mode that
    reads only the constants (MODE11) still gives one value per element; `operand` is the
    register-file operand of an `_RF` unit. The unit's declaration (`ir.vector.units`)
    names its numerics: an element-wise `fn`, or a whole-step `run`."""
    spec, rf = spec_of(unit), is_rf(unit)
    if rf:
        operand = _rf_operand(unit, values, operand)
    if spec.run is None and spec.fn is None:
        raise KeyError(unit)
    if spec.scalar_in != "any" and values.dtype != _STORED[spec.scalar_in]:
        raise TypeError(f"{a_an(unit)} step reads {spec.scalar_in} values, not {values.dtype}")
    if spec.run is not None:
        out = np.asarray(spec.run(op, arg, values, mode_enum(mode), arg1))
    else:  # an `_RF` unit (binary) reads its operand from the register file, the others their constants
        operands = (operand,) if rf else (arg, arg1)[:spec.arity - 1]
        out = run_elementwise(spec.fn(op), spec.arity, spec.scalar_in, values, mode_enum(mode), operands)
    if spec.shape in ("split", "concat") or out.shape == values.shape:
        return out
    return np.array(np.broadcast_to(out, values.shape))
