"""Hand-built `vector_pair` records each refused by one VPAIR rule (merged into the verifier tests)."""

from __future__ import annotations

import attrs

from ir.dtypes import DType
from ir.mapping.api import m
from ir.types import StreamType
from tu_ops import Ref, VeOpName
from tu_ops.vector_pair import PairSide, PairStep, PairUnit, VectorPairOp

_AXES = {"A": 8, "E": 8, "I": 2, "J": 4}
_SPACE = tuple(m(t, axes=_AXES) for t in ("1", "1 # 2", "1 # 256"))


def _q(text: str):
    return m(text, axes=_AXES)


def stream(dtype: DType, time: str = "A", packet: str = "E") -> StreamType:
    return StreamType(dtype, *_SPACE, _q(time), _q(packet), "main")


def step(unit: str, op: str, side: str, a0: int = 0, a1: int = 0) -> PairStep:
    return PairStep(PairUnit[unit], VeOpName[op], PairSide[side], a0, a1)


ZIP_ADD = step("CLIP_I32", "ADD_FXP", "ZIP", 1)
GOOD = VectorPairOp(result=Ref(4), input=Ref(3), axis=_q("I"), split_time=_q("A"),
                    steps=(step("FXP", "MUL_INT", "G0", 10), ZIP_ADD, step("FXP_TO_FP", "NONE", "MERGED", 31)),
                    input_type=stream(DType.I32, "A, I"), output_type=stream(DType.F32))


def _bad(**changes):
    return lambda: (attrs.evolve(GOOD, **changes), None)


def _steps(*steps, out=DType.I32):
    return _bad(steps=steps, output_type=stream(out))


BAD_PAIR = {
    "VPAIR-1": _bad(output_type=stream(DType.I32)),
    "VPAIR-1:split": _bad(split_time=_q("A, I")),
    "VPAIR-1:axis": _bad(axis=_q("J")),
    "VPAIR-1:packet": _bad(input_type=stream(DType.I32, "A, I", "E # 16"), output_type=stream(DType.F32, "A", "E # 16")),
    "VPAIR-1:scalar": _steps(step("CLIP_F32", "MAX", "BOTH"), step("CLIP_F32", "ADD", "ZIP", 1)),
    "VPAIR-1:way": _steps(step("FP_UNARY", "EXP", "G0"), ZIP_ADD),
    "VPAIR-2": _steps(step("FXP", "ADD_FXP", "G0", 5), step("FXP", "SUB_FXP", "ZIP", 1)),
    "VPAIR-2:no-zip": _steps(step("FXP", "ADD_FXP", "BOTH", 1, 2)),
    "VPAIR-2:two-zips": _steps(ZIP_ADD, step("CLIP_I32", "MAX", "ZIP", 1)),
    "VPAIR-2:order": _steps(step("CLIP_I32", "MAX", "G1", 0, 3), step("FXP", "ADD_FXP", "ZIP", 1)),
    "VPAIR-2:paired-after-zip": _steps(ZIP_ADD, step("CLIP_I32", "MAX", "G0", 1)),
    "VPAIR-3": _steps(step("CLIP_I32", "ADD_FXP", "ZIP", 9)),
    "VPAIR-3:shift": _steps(step("FXP", "LEFT_SHIFT", "G1", 0, 40), ZIP_ADD),
    "VPAIR-3:skipped-arg": _steps(step("FXP", "MUL_INT", "G0", 2, 7), ZIP_ADD),
}
