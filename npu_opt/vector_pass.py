"""A Vector Engine pass: the state a stream carries through the engine (`VePass`, a pair's
`PairPass`), the step every stage method ends with (`_step`, `_pair_step`: emit the op, claim
its ALU, return the object of the next stage) and the tables of the stage classes that step
looks up. Below the stage methods (npu_opt.vector_stages, vector_chain_methods, vector_pair,
vector_reduce, vector_branch, vector_stash, vrf, vector_unit_methods); the written-out stage
classes (npu_opt.vector_stage_classes, vector_inter_first_classes, vector_pair_classes) fill
the tables, and npu_opt.vector_engine loads them.
"""

from __future__ import annotations

import numbers
from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.location import Location
from ir.vector import enums as E
from ir.vector import ops as vops
from ir.vector.errors import VectorRuleError
from ir.vector.operands import VrfOperand
from ir.vector.stages import AluBudget, VeStage
from ir.vector.variants import expect
from npu_opt.branched import Branched
from npu_opt.stagebase import Poisoned, StreamStage, emit_op, kind_error, refuse_dead
from npu_opt.tensor_data import VrfTensorData

__all__ = ["VePass", "VectorStream", "PairPass", "VECTOR_STAGE_CLASSES", "INTER_FIRST_CLASSES", "AFTER_INTER_CLASSES",
           "PAIR_STAGE_CLASSES", "vrf_unread"]

S = VeStage


@attrs.define
class VePass:
    """One pass through the engine: its stage so far and the ALUs its ops hold."""

    stage: VeStage | None = None
    alus: AluBudget = attrs.field(factory=AluBudget)
    tag: Any = None  # (the tagged stream value, its comparison codes) once tagged (npu_opt.vector_branch)
    stash: Any = None  # the stashed value, then "spent" once read (npu_opt.vector_stash)
    zipped: bool = False  # the merged stream of a pair pass
    order: Any = None  # the VeOrder once the pass has an inter-slice reduce (npu_opt.vector_reduce)
    reduced: bool = False  # after an intra-slice reduce: no VRF read follows (VE-REDUCE-6, npu_opt.vrf)


class VectorStream(StreamStage):
    """Base of the Vector Engine stage objects; `ve` is the pass the stream is in."""

    def __init__(self, value: Any, chain: Any, ve: VePass | None = None) -> None:
        super().__init__(value, chain)
        self.ve = ve or VePass()


def _step(stage: VectorStream, loc: Location, op_cls: type, dst: VeStage, alu: Any = None,
          **fields: Any) -> Any:
    """Emit the op (it types its result, its rules run) and return the object of stage `dst`."""
    refused = None if alu is None else _claim(stage, loc, op_cls.STAGE, alu)
    if refused is not None:
        return refused
    op = emit_op(stage, loc, op_cls, **fields)
    ve = attrs.evolve(stage.ve, stage=dst)
    scalar = vops.SCALARS.get(op.result.type.dtype, "i32")
    if dst == S.INTER_SLICE_REDUCE or ve.order == E.VeOrder.INTER_FIRST:
        cls = AFTER_INTER_CLASSES[(scalar, ve.order == E.VeOrder.INTER_FIRST)] if dst == S.INTER_SLICE_REDUCE \
            else INTER_FIRST_CLASSES[(dst, scalar)]
        return cls(op.result, stage.chain, ve)
    return VECTOR_STAGE_CLASSES[(dst, scalar)](op.result, stage.chain, ve)


# (stage, scalar) -> its class; npu_opt.vector_stage_classes (generated from `declare_class`) fills it
VECTOR_STAGE_CLASSES: dict[tuple[VeStage, str], type] = {}


# the same after an InterFirst inter-slice reduce; npu_opt.vector_inter_first_classes fills it
INTER_FIRST_CLASSES: dict[tuple[VeStage, str], type] = {}

# (scalar, inter_first) -> its class; npu_opt.vector_inter_first_classes (generated from `declare_after_class`)
# fills it
AFTER_INTER_CLASSES: dict[tuple[str, bool], type] = {}


@attrs.define
class PairPass:
    """The pass of a pair: its stage so far and the ALUs its ops hold (shared by both groups)."""

    stage: VeStage = S.TAG
    alus: AluBudget = attrs.field(factory=AluBudget)


def _claim(stage: Any, loc: Location, name: str, alu: Any) -> Poisoned | None:
    """Claim `alu` for op `name` in the stage's pass (a pair's or a chain's), or the refusal (VE-ALU-1)."""
    try:
        stage.ve.alus.claim(alu, method=name)
    except VectorRuleError as e:
        return refuse_dead(stage, loc, name, e.violation())
    return None


def _pair_step(stage: PairStream, loc: Location, op_cls: type, dst: VeStage, alu: Any = None, **fields: Any) -> Any:
    """Emit a paired op and return the pair object of stage `dst`."""
    if alu is not None and _claim(stage, loc, op_cls.STAGE, alu):
        return Poisoned(op_cls.STAGE)
    op = emit_op(stage, loc, op_cls, **fields)
    scalar = "f32" if op.result.type.dtype.name == "F32" else "i32"
    return PAIR_STAGE_CLASSES[(dst, scalar)](op.result, stage.chain, attrs.evolve(stage.ve, stage=dst))


def _enum(stage: Any, loc: Location, name: str, enums: Any, value: Any) -> Any:
    """`value` as an enum value of `enums`, or the refusal (VE-ENUM-1 / VE-ENUM-4)."""
    try:
        return expect(enums, value, method=name)
    except VectorRuleError as e:
        return refuse_dead(stage, loc, name, e.violation())


def _group_operand(value: Any, scalar: str) -> tuple[bool, Any]:
    """(ok, operand): a number, a VRF tensor (as a VrfOperand), or None for `None` / `()`
    (the group is skipped)."""
    if value is None or value == ():
        return True, None
    if isinstance(value, VrfTensorData):
        return True, VrfOperand(value.value, scalar)
    ok = isinstance(value, (numbers.Integral, float)) and not isinstance(value, bool)
    return ok, value


def _operands(stage: Any, loc: Location, name: str, c0: Any, c1: Any) -> tuple[Any, Any] | Poisoned:
    if isinstance(c0, Branched) or isinstance(c1, Branched):
        return refuse_dead(stage, loc, name, Violation(
            "VE-TAG-3", f"`{name}` on a pair takes no branched operand: a pair stream has no tags",
            help="give each group a constant (or None to skip it); a pair op spends the guards on its groups"))
    if any(isinstance(c, Poisoned) or (isinstance(c, VrfTensorData) and isinstance(c.value, Poisoned)) for c in (c0, c1)):
        return refuse_dead(stage, loc, name, Violation("", "argument comes from a refused call"))
    scalar = "f32" if stage.value.type.dtype.name == "F32" else "i32"
    (ok0, a), (ok1, b) = _group_operand(c0, scalar), _group_operand(c1, scalar)
    if not (ok0 and ok1):
        bad = c0 if not ok0 else c1
        return refuse_dead(stage, loc, name, kind_error(
            f"a group operand of `{name}` is a constant int or float, a VRF tensor, or None to skip the group, "
            f"not {type(bad).__name__}", help="pass a Python number or a tensor made by `to_vrf`"))
    if a is None and b is None:
        return refuse_dead(stage, loc, name, kind_error(f"`{name}` skips both groups",
                                                        help="drop the call, or give one group an operand"))
    return a, b


# (stage, scalar) -> its class; npu_opt.vector_pair_classes (generated from `declare_class`) fills it
PAIR_STAGE_CLASSES: dict[tuple[VeStage, str], type] = {}


def vrf_unread(name: str) -> Violation:
    """VRF-7: a VRF tensor where no register-file read is compiled (the Logic cluster,
    FMA_F's operand)."""
    where = ("the Logic cluster" if name.startswith("vector_logic") else
             "FMA_F's operand" if name.startswith("vector_fp_ternary") else f"`{name}`")
    return Violation("VRF-7", f"`{name}` cannot read a VRF tensor: no register-file read of {where} is compiled",
                     label="a VRF operand here", help="read the VRF with `vector_fxp`, `vector_clip`, "
                     "`vector_fp_binary` or `vector_fp_div` (or their _with_mode forms); a value read once may be the "
                     "stash (`Stash`), a uniform one a constant")
