"""The traced op a `vector` record's step stands for, for the steps of the rest of the
element-wise chain (logic, fma, fp_div, split, concat, reinterpret); the VISA re-derivation
(`tu_ops.lower.vector.traced_pass`) asks here first. `mode_of` reads a step's mode back.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir import ops as ir
from ir import vector_chain_ops as cops
from ir.dtypes import DType
from ir.vector import enums as E
from ir.vector import ways
from tu_ops.vector import VeStep

__all__ = ["traced_chain_step", "mode_of"]


def mode_of(step: VeStep) -> Any:
    """The argument mode enum value of a step (None for DEFAULT)."""
    name = step.mode.name
    if name == "DEFAULT":
        return None
    return getattr(E.BinaryArgMode, name, None) or getattr(E.TernaryArgMode, name)


def _f32(bits: int) -> np.float32:
    """The f32 of a bit pattern, kept as np.float32 so a NaN keeps its payload."""
    return np.array(bits, np.uint32).view(np.float32)[()]


def _reshaped(cls: type, shape: Any, src: ir.Value, ident: int) -> Any:
    time, packet = shape(src.type.time, src.type.packet)
    out = attrs.evolve(src.type, time=time, packet=packet)
    return cls(input=src, time=time, packet=packet, result=ir.Value(ident, out))


def traced_chain_step(step: VeStep, src: ir.Value, ident: int) -> Any | None:
    """The traced op of `step` when it is one of this module's units, else None."""
    unit, name, arg, mode = step.unit.name, step.op.name, step.arg, mode_of(step)
    same = ir.Value(ident, src.type)
    if unit == "LOGIC_I32":
        return cops.VectorLogic(input=src, op=getattr(E.LogicBinaryOpI32, name), const=arg, mode=mode, result=same)
    if unit == "LOGIC_F32":
        return cops.VectorLogic(input=src, op=getattr(E.LogicBinaryOpF32, name), const=_f32(arg), mode=mode,
                                result=same)
    if unit == "FP_TERNARY":
        return cops.VectorFpTernary(input=src, op=getattr(E.FpTernaryOp, name), const=_f32(arg),
                                    const1=_f32(step.arg1), mode=mode, result=same)
    if unit == "FP_DIV":
        return cops.VectorFpDiv(input=src, op=getattr(E.FpDivBinaryOp, name), const=_f32(arg), mode=mode, result=same)
    if unit == "NARROW_SPLIT":
        return _reshaped(cops.VectorNarrowSplit, ways.split_shape, src, ident)
    if unit == "WIDEN_CONCAT":
        return _reshaped(cops.VectorWidenConcat, ways.concat_shape, src, ident)
    if unit == "REINTERPRET":
        to = name[len("TO_"):].lower()
        out = attrs.evolve(src.type, dtype=DType.I32 if to == "i32" else DType.F32)
        return cops.VectorReinterpret(input=src, scalar_to=to, result=ir.Value(ident, out))
    return None
