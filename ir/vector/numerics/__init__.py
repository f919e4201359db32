"""Exact host semantics of every Vector Engine op, vectorised over int32 / float32 arrays.

By family: `fxp` (the eleven fixed-point ops), `fp` (f32 add / sub / mul / div / fma),
`transcendental` (the unary float ops and their ulp tolerances), `clip_logic` (clip and
bitwise ops), `conversions` (fixed point <-> f32, reinterpret), `reduce` (intra- and
inter-slice reducers), `modes` (argument modes). The `apply_*` functions dispatch on an
op enum value of `ir.vector.enums`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector import enums as E
from ir.vector.numerics.clip_logic import CLIP_F32_OPS, CLIP_I32_OPS, LOGIC_F32_OPS, LOGIC_I32_OPS
from ir.vector.numerics.conversions import fp_to_fxp, fxp_to_fp, reinterpret_as_f32, reinterpret_as_i32
from ir.vector.numerics.fp import FP_BINARY_OPS, div_f, fma_f
from ir.vector.numerics.fxp import FXP_OPS
from ir.vector.numerics.modes import apply_binary_mode, apply_ternary_mode
from ir.vector.numerics.reduce import reduce_f32, reduce_i32
from ir.vector.numerics.transcendental import FP_UNARY_OPS, ULP_TOLERANCE, UlpTolerance

__all__ = ["apply_unary", "apply_binary", "apply_ternary", "apply_reduce", "BINARY_TABLES",
           "fxp_to_fp", "fp_to_fxp", "reinterpret_as_f32", "reinterpret_as_i32",
           "apply_binary_mode", "apply_ternary_mode", "ULP_TOLERANCE", "UlpTolerance"]

BINARY_TABLES: dict[type, dict[str, Any]] = {
    E.FxpBinaryOp: FXP_OPS,
    E.LogicBinaryOpI32: LOGIC_I32_OPS,
    E.LogicBinaryOpF32: LOGIC_F32_OPS,
    E.FpBinaryOp: FP_BINARY_OPS,
    E.FpDivBinaryOp: {"DIV_F": div_f},
    E.ClipBinaryOpI32: CLIP_I32_OPS,
    E.ClipBinaryOpF32: CLIP_F32_OPS,
}


def apply_unary(op: E.FpUnaryOp, x: Any) -> np.ndarray:
    """An `FpUnaryOp` on a float32 array."""
    return FP_UNARY_OPS[op.name](x)


def apply_binary(op: Any, stream: Any, operand: Any, mode: E.BinaryArgMode | None = None) -> np.ndarray:
    """A binary op enum value on the stream and an operand, under argument `mode`."""
    fn = BINARY_TABLES[type(op)][op.name]
    return apply_binary_mode(fn, mode, stream, operand)


def apply_ternary(op: E.FpTernaryOp, stream: Any, operand0: Any, operand1: Any,
                  mode: E.TernaryArgMode | None = None) -> np.ndarray:
    """`FpTernaryOp.FMA_F` on the stream and two operands, under argument `mode`."""
    if op.name != "FMA_F":
        raise KeyError(op)
    return apply_ternary_mode(fma_f, mode, stream, operand0, operand1)


def apply_reduce(op: Any, x: Any, axis: int = -1) -> np.ndarray:
    """An intra- or inter-slice reduce op enum value folded along `axis`."""
    if isinstance(op, (E.IntraSliceReduceOpI32, E.InterSliceReduceOpI32)):
        return reduce_i32(op.name, x, axis)
    if isinstance(op, (E.IntraSliceReduceOpF32, E.InterSliceReduceOpF32)):
        return reduce_f32(op.name, x, axis)
    raise TypeError(f"not a reduce op: {op!r}")
