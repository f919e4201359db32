"""Hand-built `vector` records each refused by one VEOP rule (merged into the verifier tests)."""

from __future__ import annotations

import attrs

from ir.dtypes import DType
from ir.mapping.api import m
from ir.types import StreamType
from tu_ops import Ref, VectorEngineOp, VeOpName, VeStep, VeUnit
from tu_ops.vector import VeMode

_AXES = {"A": 8, "E": 8}
_SPACE = tuple(m(t, axes=_AXES) for t in ("1", "1 # 2", "1 # 256"))


def stream(dtype: DType, packet: str = "E") -> StreamType:
    return StreamType(dtype, *_SPACE, m("A", axes=_AXES), m(packet, axes=_AXES), "main")


TAG = VeStep(VeUnit.TAG, VeOpName.ZERO, 0)
GOOD = VectorEngineOp(result=Ref(4), input=Ref(3),
                      steps=(TAG, VeStep(VeUnit.FXP, VeOpName.MUL_INT, -3), VeStep(VeUnit.FXP_TO_FP, VeOpName.NONE, 31),
                             VeStep(VeUnit.CLIP_F32, VeOpName.MAX, 0)),
                      input_type=stream(DType.I32), output_type=stream(DType.F32))


def _bad(**changes):
    return lambda: (attrs.evolve(GOOD, **changes), None)


def _steps(*steps):
    return _bad(steps=(TAG, *steps), output_type=stream(DType.I32))


BAD_VECTOR = {
    "VEOP-1": _bad(output_type=stream(DType.I32)),
    "VEOP-1:no-tag": _bad(steps=GOOD.steps[1:]),
    "VEOP-1:scalar": _steps(VeStep(VeUnit.CLIP_F32, VeOpName.MAX, 0)),
    "VEOP-1:packet": _bad(input_type=stream(DType.I32, "E # 16"), output_type=stream(DType.F32, "E # 16")),
    "VEOP-1:way": _bad(steps=(TAG, VeStep(VeUnit.FXP_TO_FP, VeOpName.NONE, 31),
                              VeStep(VeUnit.FP_UNARY, VeOpName.EXP, 0)), output_type=stream(DType.F32)),
    "VEOP-1:ends-4-way": _bad(steps=(TAG, VeStep(VeUnit.FXP_TO_FP, VeOpName.NONE, 31),
                                     VeStep(VeUnit.NARROW_TRIM, VeOpName.NONE, 0)), output_type=stream(DType.F32)),
    "VEOP-2": _steps(VeStep(VeUnit.FXP, VeOpName.ADD_FXP, 1), VeStep(VeUnit.FXP, VeOpName.SUB_FXP_SAT, 1)),
    "VEOP-2:order": _steps(VeStep(VeUnit.CLIP_I32, VeOpName.MAX, 0), VeStep(VeUnit.FXP, VeOpName.MUL_INT, 2)),
    "VEOP-3": _steps(VeStep(VeUnit.FXP, VeOpName.LEFT_SHIFT, 32)),
    "VEOP-3:i32": _steps(VeStep(VeUnit.FXP, VeOpName.ADD_FXP, 2**31)),
    "VEOP-3:op": _steps(VeStep(VeUnit.FXP, VeOpName.MAX, 0)),
    "VEOP-3:unary-arg": _bad(steps=(TAG, VeStep(VeUnit.FXP_TO_FP, VeOpName.NONE, 31),
                                    VeStep(VeUnit.NARROW_TRIM, VeOpName.NONE, 0), VeStep(VeUnit.FP_UNARY, VeOpName.EXP, 1),
                                    VeStep(VeUnit.WIDEN_PAD, VeOpName.NONE, 0)), output_type=stream(DType.F32)),
    "VEOP-3:width": _bad(steps=(TAG, VeStep(VeUnit.FXP_TO_FP, VeOpName.NONE, 32)), output_type=stream(DType.F32)),
    # the rest of the element-wise chain
    "VEOP-1:split-shape": _bad(steps=(TAG, VeStep(VeUnit.NARROW_SPLIT, VeOpName.NONE, 0),
                                      VeStep(VeUnit.WIDEN_PAD, VeOpName.NONE, 0)), output_type=stream(DType.I32)),
    "VEOP-1:reinterpret": _steps(VeStep(VeUnit.REINTERPRET, VeOpName.TO_F32, 0)),
    "VEOP-2:div-before-fp": _bad(steps=(TAG, VeStep(VeUnit.FXP_TO_FP, VeOpName.NONE, 31),
                                        VeStep(VeUnit.NARROW_TRIM, VeOpName.NONE, 0), VeStep(VeUnit.FP_DIV, VeOpName.DIV_F, 0),
                                        VeStep(VeUnit.FP_BINARY, VeOpName.ADD_F, 0),
                                        VeStep(VeUnit.WIDEN_PAD, VeOpName.NONE, 0)), output_type=stream(DType.F32)),
    "VEOP-3:mode": _steps(VeStep(VeUnit.FXP, VeOpName.ADD_FXP, 1, VeMode.MODE012)),
    "VEOP-3:arg1": _steps(VeStep(VeUnit.FXP, VeOpName.ADD_FXP, 1, VeMode.DEFAULT, 7)),
    "VEOP-3:reinterpret": _steps(VeStep(VeUnit.REINTERPRET, VeOpName.MAX, 0)),
    "VEOP-3:logic-shift": _steps(VeStep(VeUnit.LOGIC_I32, VeOpName.LEFT_SHIFT, 33)),
}
