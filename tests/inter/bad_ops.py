"""Bad `inter_slice_reduce` records, one per verifier rule (tests/tu_ops/test_verifiers.py)."""

from __future__ import annotations

from ir.dtypes import DType
from ir.mapping.api import m
from ir.types import StreamType
from tu_ops.base import Ref
from tu_ops.vector_inter import InterReduceName, InterSliceReduceOp

_AXES = {"A": 512, "R": 4}


def _q(text: str):
    return m(text, axes=_AXES)


def _record(dtype: DType, op: InterReduceName, out_slice: str, out_time: str = "1") -> InterSliceReduceOp:
    chip, cluster = _q("1"), _q("1 # 2")
    src = StreamType(dtype, chip, cluster, _q("A / 8, R"), _q("1"), _q("A % 8"), "main")
    dst = StreamType(dtype, chip, cluster, _q(out_slice), _q(out_time), _q("A % 8"), "main")
    return InterSliceReduceOp(result=Ref(4), input=Ref(3), op=op, out_slice=_q(out_slice), input_type=src,
                              output_type=dst)


def good(dtype: DType = DType.I32, op: InterReduceName = InterReduceName.ADD_SAT) -> InterSliceReduceOp:
    return _record(dtype, op, "A / 8, 1 # 4")


BAD_INTER = {
    "INTEROP-1": lambda: (_record(DType.I32, InterReduceName.MUL, "A / 8, 1 # 4"), None),
    "INTEROP-1:f32": lambda: (_record(DType.F32, InterReduceName.ADD_SAT, "A / 8, 1 # 4"), None),
    "INTEROP-2": lambda: (_record(DType.I32, InterReduceName.ADD, "1 # 4, A / 8"), None),
    "INTEROP-2:size": lambda: (_record(DType.F32, InterReduceName.MAX, "A / 8"), None),
}
