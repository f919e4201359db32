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
from ir.vector.numerics.clip_logic import CLIP_F32_OPS, CLIP_I32_OPS, LOGIC_F32_OPS, LOGIC_I32_OPS
from ir.vector.numerics.conversions import fp_to_fxp, fxp_to_fp
from ir.vector.numerics.fp import FP_BINARY_OPS, div_f, fma_f
from ir.vector.numerics.modes import apply_binary_mode, apply_ternary_mode
from ir.vector.numerics.fxp import FXP_OPS
from ir.vector.numerics.transcendental import FP_UNARY_OPS

__all__ = ["UNITS", "run_step", "f32_bits", "unit_scalars"]

# unit -> (input scalar, output scalar)
UNITS: dict[str, tuple[str, str]] = {
    "TAG": ("any", "same"), "FXP": ("i32", "i32"), "CLIP_I32": ("i32", "i32"), "CLIP_F32": ("f32", "f32"),
    "FXP_TO_FP": ("i32", "f32"), "FP_TO_FXP": ("f32", "i32"),
    "NARROW_TRIM": ("any", "same"), "FP_UNARY": ("f32", "f32"), "FP_BINARY": ("f32", "f32"),
    "WIDEN_PAD": ("any", "same"),
    # the rest of the element-wise chain
    "LOGIC_I32": ("i32", "i32"), "LOGIC_F32": ("f32", "f32"), "FP_TERNARY": ("f32", "f32"), "FP_DIV": ("f32", "f32"),
    "NARROW_SPLIT": ("any", "same"), "WIDEN_CONCAT": ("any", "same"), "REINTERPRET": ("any", "op"),
    "INTRA_REDUCE_I32": ("i32", "i32"), "INTRA_REDUCE_F32": ("f32", "f32"),
    "FXP_RF": ("i32", "i32"), "CLIP_I32_RF": ("i32", "i32"), "CLIP_F32_RF": ("f32", "f32"),
    "FP_BINARY_RF": ("f32", "f32"), "FP_DIV_RF": ("f32", "f32"),
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


def _run_rf(unit: str, op: str, values: np.ndarray, rhs: np.ndarray, mode: str | None = None) -> np.ndarray:
    """A binary step whose argument 1 is the register-file operand, one value per cell; `mode`
    picks the op's inputs among the stream (0) and that operand (1), as for a constant."""
    src, _ = UNITS[unit]
    if values.dtype != _STORED[src]:
        raise TypeError(f"a {unit} step reads {src} values, not {values.dtype}")
    base, how = unit[:-3], _mode(mode)
    if base == "FXP":
        return np.asarray(apply_binary_mode(FXP_OPS[op], how, values, rhs), np.int32)
    if base == "CLIP_I32":
        return np.asarray(apply_binary_mode(CLIP_I32_OPS[op], how, values, rhs), np.int32)
    fn = (CLIP_F32_OPS[op] if base == "CLIP_F32" else div_f if base == "FP_DIV"
          else FP_BINARY_OPS["MUL_F" if op.startswith("MUL_F") else op])
    return np.asarray(apply_binary_mode(fn, how, _f32(values), _f32(rhs)), np.float32).view(np.uint32)


def _mode(mode: str | None) -> Any:
    """The argument mode enum value named `mode` (None for the default, MODE01 / MODE012)."""
    if mode in (None, "DEFAULT"):
        return None
    return getattr(BinaryArgMode, mode, None) or getattr(TernaryArgMode, mode)


def run_step(unit: str, op: str, arg: int, values: np.ndarray, mode: str | None = None,
             arg1: int = 0, operand: np.ndarray | None = None) -> np.ndarray:
    """The step applied to stored values (int32 for i32, uint32 bits for f32). A mode that
    reads only the constants (MODE11) still gives one value per element; `operand` is the
    register-file operand of an `_RF` unit."""
    if unit.endswith("_RF"):
        return _run_rf(unit, op, values, _rf_operand(unit, values, operand), mode)
    out = np.asarray(_run(unit, op, arg, values, mode, arg1))
    if unit in ("NARROW_SPLIT", "WIDEN_CONCAT") or out.shape == values.shape:
        return out
    return np.array(np.broadcast_to(out, values.shape))


def _run(unit: str, op: str, arg: int, values: np.ndarray, mode: str | None, arg1: int) -> np.ndarray:
    if unit == "TAG":
        return values
    if unit == "NARROW_TRIM":
        out = np.array(values, copy=True)
        out[..., 4:] = 0
        return out
    src, _ = UNITS[unit]
    if src != "any" and values.dtype != _STORED[src]:
        raise TypeError(f"a {unit} step reads {src} values, not {values.dtype}")
    if unit in _MORE:
        return _MORE[unit](op, arg, values, _mode(mode), arg1)
    if unit == "FXP":
        return apply_binary_mode(FXP_OPS[op], _mode(mode), values, np.int32(arg))
    if unit == "CLIP_I32":
        return apply_binary_mode(CLIP_I32_OPS[op], _mode(mode), values, np.int32(arg))
    if unit == "CLIP_F32":
        return _f32_binary(CLIP_F32_OPS[op], mode, values, arg)
    if unit == "FXP_TO_FP":
        return fxp_to_fp(values, arg).view(np.uint32)
    if unit == "FP_TO_FXP":
        return fp_to_fxp(_f32(values), arg)
    if unit == "FP_UNARY":
        return FP_UNARY_OPS[op](_f32(values)).view(np.uint32)
    if unit == "FP_BINARY":
        return _f32_binary(FP_BINARY_OPS["MUL_F" if op.startswith("MUL_F") else op], mode, values, arg)
    if unit == "NARROW_TRIM":
        out = np.array(values, copy=True)
        out[..., 4:] = 0
        return out
    if unit == "WIDEN_PAD":
        return values
    raise KeyError(unit)


def _const_f32(bits: int) -> np.ndarray:
    return _f32(np.array(bits, np.uint32))


def _f32_binary(fn: Any, mode: str | None, values: np.ndarray, arg: int) -> np.ndarray:
    return np.asarray(apply_binary_mode(fn, _mode(mode), _f32(values), _const_f32(arg)), np.float32).view(np.uint32)


def _logic(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    if values.dtype == np.uint32:  # LOGIC_F32: the bits combined as they are
        fn = LOGIC_F32_OPS[op]
        out = apply_binary_mode(fn, mode, values.view(np.float32), _const_f32(arg))
        return np.asarray(out, np.float32).view(np.uint32)
    return np.asarray(apply_binary_mode(LOGIC_I32_OPS[op], mode, values, np.int32(arg)), np.int32)


def _ternary(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    if op != "FMA_F":
        raise KeyError(op)
    out = apply_ternary_mode(fma_f, mode, _f32(values), _const_f32(arg), _const_f32(arg1))
    return np.asarray(out, np.float32).view(np.uint32)


def _div(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    if op != "DIV_F":
        raise KeyError(op)
    return np.asarray(apply_binary_mode(div_f, mode, _f32(values), _const_f32(arg)), np.float32).view(np.uint32)


def _reinterpret(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    return np.ascontiguousarray(values).view({"TO_I32": np.int32, "TO_F32": np.uint32}[op])


def _split(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    """(..., T, 8) -> (..., 2T, 8): flit t's front four at step 2t, its back four at 2t + 1."""
    halves = values.reshape(*values.shape[:-2], values.shape[-2] * 2, 4)
    out = np.zeros((*halves.shape[:-1], 8), values.dtype)
    out[..., :4] = halves
    return out


def _concat(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    """(..., T, 8) with T even -> (..., T / 2, 8): the front fours of steps 2t and 2t + 1 rejoined."""
    if values.shape[-2] % 2:
        raise ValueError(f"a concat joins pairs of time steps, not {values.shape[-2]}")
    front = np.ascontiguousarray(values[..., :4])
    return front.reshape(*values.shape[:-2], values.shape[-2] // 2, 8)


_MORE = {"LOGIC_I32": _logic, "LOGIC_F32": _logic, "FP_TERNARY": _ternary, "FP_DIV": _div,
         "REINTERPRET": _reinterpret, "NARROW_SPLIT": _split, "WIDEN_CONCAT": _concat}
