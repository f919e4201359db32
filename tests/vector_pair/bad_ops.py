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


REDUCE_MIN = step("INTRA_REDUCE_I32", "MIN", "MERGED")


def _reducing(*reduce, time="A", out_time="1"):
    """A record adding the groups and reducing the merged stream (time `time`, packet J # 8)."""
    steps = (step("FXP", "ADD_FXP", "ZIP", 1), step("NARROW_TRIM", "NONE", "MERGED"), *reduce,
             step("WIDEN_PAD", "NONE", "MERGED"))
    return lambda: (attrs.evolve(GOOD, split_time=_q(time), steps=steps,
                                 input_type=stream(DType.I32, f"{time}, I", "J # 8"),
                                 output_type=stream(DType.I32, out_time, "J # 8")), None)


def _fma(fma):
    """An f32 record: split, the paired FMA_F step `fma`, a MUL0 zip, concat."""
    steps = (step("NARROW_SPLIT", "NONE", "BOTH"), fma, step("FP_BINARY", "MUL_F_MUL0", "ZIP", 1),
             step("WIDEN_CONCAT", "NONE", "MERGED"))
    return lambda: (attrs.evolve(GOOD, steps=steps, input_type=stream(DType.F32, "A, I"),
                                 output_type=stream(DType.F32)), None)


def _padded_vcg():
    """The valid counts of a reduce of A # 16 (time) over 4-cell packets of J."""
    from tu_ops.valid_count import reduce_vcg

    return reduce_vcg(_SPACE[2], _q("A # 16"), _q("J"), "A")


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
    "VPAIR-3:vcg": lambda: (attrs.evolve(GOOD, steps=(attrs.evolve(ZIP_ADD, vcg=_padded_vcg()),),
                                         output_type=stream(DType.I32)), None),
    "VPAIR-3:add": _steps(attrs.evolve(step("FXP", "MUL_INT", "G0", 2), add0=5), ZIP_ADD),     # add0 on an FXP step
    "VPAIR-3:fma-skipped-add": _fma(attrs.evolve(step("FP_TERNARY", "FMA_F", "G0", 0x3F800000), add1=0x3F800000)),
    "VPAIR-3:fma-add-bits": _fma(attrs.evolve(step("FP_TERNARY", "FMA_F", "BOTH", 0x3F800000, 0), add1=2**32)),
    "VPAIR-4": _reducing(REDUCE_MIN, out_time="A"),                     # the reduce removes nothing
    "VPAIR-4:vcg": _reducing(REDUCE_MIN, time="A # 16"),                # a padded axis counted by no vcg=
}


# --- `vector_branch` records, each refused by one VBR rule --------------------------------------

from tu_ops.vector import VeUnit  # noqa: E402
from tu_ops.vector_branch import BranchStep, CmpName, Slot, TagCmp, VectorBranchOp  # noqa: E402

_LESS0 = (TagCmp(CmpName.LESS, 0), *(TagCmp(CmpName.FALSE, 0),) * 3)
_NEG = Slot(1, 1, 0, 0)
GOOD_BRANCH = VectorBranchOp(result=Ref(4), input=Ref(3), tag=_LESS0, stash_at=-1,
                             steps=(BranchStep(VeUnit.FXP, VeOpName.MUL_INT, 0, (_NEG,)),),
                             input_type=stream(DType.I32), output_type=stream(DType.I32))


def _branch(*steps, tag=_LESS0, out=DType.I32, stash_at=-1):
    return lambda: (attrs.evolve(GOOD_BRANCH, steps=steps, tag=tag, output_type=stream(out), stash_at=stash_at), None)


_READ = BranchStep(VeUnit.CLIP_I32, VeOpName.MAX, 0, (), 1)
_TO_F32 = BranchStep(VeUnit.FXP_TO_FP, VeOpName.NONE, 31, ())


def _fxp(*slots, op="MUL_INT", arg=0):
    return BranchStep(VeUnit.FXP, VeOpName[op], arg, slots)


BAD_BRANCH = {
    "VBR-1": _branch(_fxp(_NEG), out=DType.F32),
    "VBR-1:alu": _branch(_fxp(_NEG), _fxp(_NEG, op="MUL_FXP")),
    "VBR-1:tag-step": _branch(BranchStep(VeUnit.TAG, VeOpName.ZERO, 0, ()), _fxp(_NEG)),
    "VBR-2": _branch(_fxp(_NEG), tag=_LESS0[:2]),
    "VBR-2:bound": _branch(_fxp(_NEG), tag=(TagCmp(CmpName.LESS, 2**31), *_LESS0[1:])),
    "VBR-2:true-bound": _branch(_fxp(_NEG), tag=(TagCmp(CmpName.TRUE, 5), *_LESS0[1:])),
    "VBR-3": _branch(_fxp(_NEG, _NEG, _NEG, _NEG)),
    "VBR-3:inert": _branch(_fxp(Slot(0, 0, 1, 3))),
    "VBR-3:after-else": _branch(_fxp(Slot(0, 0, 0, 3), _NEG)),
    "VBR-3:value": _branch(_fxp(Slot(1, 1, 0, 40), op="LEFT_SHIFT")),
    "VBR-3:want": _branch(_fxp(Slot(1, 2, 0, 3))),
    "VBR-3:arg": _branch(_fxp(_NEG, arg=5)),
    "VBR-4": _branch(_fxp(_NEG), _READ),                                  # read, never written
    "VBR-4:twice": _branch(_READ, BranchStep(VeUnit.CLIP_I32, VeOpName.MIN, 0, (), 1), stash_at=0),
    "VBR-4:before": _branch(_fxp(_NEG), _READ, stash_at=2),
    "VBR-4:scalar": _branch(_TO_F32, BranchStep(VeUnit.CLIP_F32, VeOpName.MAX, 0, (), 1), stash_at=0,
                            out=DType.F32),                              # written i32, read f32
    "VBR-4:slots": _branch(BranchStep(VeUnit.CLIP_I32, VeOpName.MAX, 0, (_NEG,), 1), stash_at=0),
    # the rf slot reading the stash (port=2)
    "VBR-3:stash-group": _branch(_fxp(Slot(8, 8, 0, 0, port=2)), stash_at=0),   # guarded on bit 3 alone
    "VBR-3:stash-value": _branch(_fxp(Slot(1, 1, 0, 4, port=2)), stash_at=0),
    "VBR-3:port": _branch(_fxp(Slot(1, 1, 0, 0, port=3)), stash_at=0),
    "VBR-3:stash-not-last": _branch(_fxp(Slot(1, 1, 0, 0, port=2), _NEG), stash_at=0),
    "VBR-3:fma-c": _branch(_TO_F32, BranchStep(VeUnit.NARROW_TRIM, VeOpName.NONE, 0, ()),
                           BranchStep(VeUnit.FP_TERNARY, VeOpName.FMA_F, 0, (Slot(1, 1, 0, 0, value1=2**32),)),
                           BranchStep(VeUnit.WIDEN_PAD, VeOpName.NONE, 0, ()), out=DType.F32),
    "VBR-4:stash-slot": _branch(_fxp(_NEG, Slot(0, 0, 0, 0, port=2))),                    # never written
    "VBR-4:stash-slot-twice": _branch(_READ, BranchStep(VeUnit.CLIP_I32, VeOpName.MIN, 0, (Slot(1, 1, 0, 0, port=2),)),
                                      stash_at=0),
    "VBR-4:ternary-way": _branch(_TO_F32, BranchStep(VeUnit.NARROW_TRIM, VeOpName.NONE, 0, ()),
                                 BranchStep(VeUnit.FP_TERNARY, VeOpName.FMA_F, 0, (), 1, arg1=0x3F800000),
                                 BranchStep(VeUnit.WIDEN_PAD, VeOpName.NONE, 0, ()), stash_at=1,
                                 out=DType.F32),                        # written 8-way, read 4-way
}
