"""`vrf_load` and `vector_rf` records each refused by one rule (merged into the verifier tests):
taken from a compiled bias-add kernel, then damaged."""

from __future__ import annotations

import functools

import attrs

from backends.npu import lower_kernel
from ir.dtypes import DType
from ir.mapping.api import m
from npu_opt import FxpBinaryOp, i32
from tests.vrf.kernels import rf_kernel
from tu_ops.vrf import RfRead
from tu_ops import VeUnit


@functools.cache
def _compiled():
    lowered = lower_kernel(rf_kernel(i32, "vector_fxp", FxpBinaryOp.ADD_FXP, name="vrf_bad"))
    return lowered, lowered.context()


def _op(mnemonic: str):
    lowered, _ = _compiled()
    return next(op for op in lowered.ops() if op.MNEMONIC == mnemonic)


def _bad(mnemonic: str, with_ctx: bool = False, **changes):
    def build():
        op = attrs.evolve(_op(mnemonic), **changes)
        return op, (_compiled()[1] if with_ctx else None)
    return build


def _plain_vector():
    rf = _op("vector_rf")
    fields = {f.name: getattr(rf, f.name) for f in attrs.fields(type(rf)) if f.name not in ("rf", "rf_read")}
    from tu_ops import VectorEngineOp
    return VectorEngineOp(**fields), None


def _no_rf_step():
    rf = _op("vector_rf")
    steps = tuple(attrs.evolve(s, unit=VeUnit.FXP) if s.unit.name.endswith("_RF") else s for s in rf.steps)
    return attrs.evolve(rf, steps=steps), None


def _bad_reduce():
    """A row max whose record claims to keep the packet (arg 0) while its output has one cell."""
    from backends.npu import lower_kernel as lower
    from ir.vector.enums import IntraSliceReduceOpF32
    from npu_opt import f32
    from tests.reduce.kernels import row_kernel

    lowered = lower(row_kernel(f32, IntraSliceReduceOpF32.MAX, name="reduce_bad"))
    rec = next(op for op in lowered.ops() if op.MNEMONIC == "vector")
    steps = tuple(attrs.evolve(s, arg=0) if s.unit.name.startswith("INTRA_REDUCE") else s for s in rec.steps)
    return attrs.evolve(rec, steps=steps), None


BAD_VRF = {
    "VEOP-7": _bad_reduce,
    "VRFLD-1": lambda: _bad("vrf_load", output_type=attrs.evolve(_op("vrf_load").output_type, dtype=DType.F32))(),
    "VRFLD-2": _bad("vrf_load", words=63),
    "VRFLD-2:base": _bad("vrf_load", base=2000),
    "VRFLD-2:walk": lambda: _bad("vrf_load", write=RfRead(time=[(8, 8)], packet=[(8, 2)]))(),
    "VEOP-4": _plain_vector,
    "VEOP-5": lambda: _bad("vector_rf", rf_read=(RfRead(time=[(8, 8)], packet=[(8, 1)]),))(),
    "VEOP-5:two-reads": lambda: _bad("vector_rf", rf_read=_op("vector_rf").rf_read * 2)(),
    "VEOP-5:no-rf-step": _no_rf_step,
    "VEOP-6": lambda: _bad("vector_rf", True, rf_read=(RfRead(time=[(8, 0), (8, 16)], packet=[(8, 1)]),))(),
    "VEOP-6:not-a-load": lambda: _bad("vector_rf", True, rf=(_op("vector_rf").input,))(),
    "RFRESHAPE-2": lambda: _relabel(element=_relabel_op().output_type.element.children()[0]),  # 64 words as P
    "RFRESHAPE-2:dtype": lambda: _relabel(dtype=DType.F32),
    "RFRESHAPE-2:slices": lambda: _relabel(slice=m("256")),  # every slice named, one holds the words
}


@functools.cache
def _relabel_op():
    """The `rf_reshape` of tests/vrf/test_rf_reshape.py's `regroup` (E relabelled as P, Q)."""
    from tests.vrf.test_rf_reshape import regroup

    return next(op for op in lower_kernel(regroup).ops() if op.MNEMONIC == "rf_reshape")


def _relabel(**changes):
    op = _relabel_op()
    return attrs.evolve(op, output_type=attrs.evolve(op.output_type, **changes)), None
