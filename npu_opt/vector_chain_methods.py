"""The rest of the Vector Engine's element-wise methods, offered by the stage objects of
`npu_opt.vector_stages` (which merges `CHAIN_METHODS` into its table and adds
`ANY_STAGE_METHODS` to every stage class).

- `vector_logic(op, operand)` (i32 and f32, 8-way), `vector_fp_ternary(op, (rhs, c))`,
  `vector_fp_div(operand)` (the 4-way float path), each with a `*_with_mode` form, and
  `vector_fxp_with_mode`, `vector_clip_with_mode`, `vector_fp_binary_with_mode`: the mode
  (`BinaryArgMode` / `TernaryArgMode`) picks which of the stream and the operands feed the op.
- `vector_narrow_split(time2, packet2)` / `vector_widen_concat(time2, packet2)`: the way changes
  that keep every cell (both scalars; the declared mappings are checked, VE-SPLIT-* / VE-CONCAT-*).
- `vector_reinterpret(d2)`: the bits reread as i32 or f32; it holds the stage and the way.
- `vector_filter(time2, config)`: refused (VE-FILTER-1), as the reference's host model leaves it
  unimplemented.

An operand is a constant (`resolve_operand`: a Python or numpy number, or an
`ir.vector.operands.Constant`) or, for an op with a register-file form, a VRF tensor
(`npu_opt.vrf.rf_step`; a mode then picks among the stream and the VRF value).
"""

from __future__ import annotations

import numbers
from typing import Any

import attrs

from ir.vector import chain_ops as cops
from ir.vector import ops as vops
from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.location import Location
from ir.vector import enums as E
from ir.vector.enums import Way
from ir.vector.operands import Constant
from ir.vector.stages import VeStage
from ir.vector.units import dsl_method
from npu_opt import vector_pass as vs
from npu_opt.stagebase import Poisoned, StreamStage, kind_error, refuse_dead, stage_method
from npu_opt.tensor_data import VrfTensorData
from npu_opt.vector_branch import Branched, branched_step
from npu_opt.vector_pass import vrf_unread
from npu_opt.vector_reduce import mapping_args
from npu_opt.vector_stash import Stash, stash_step
from npu_opt.vrf import rf_step

__all__ = ["CHAIN_METHODS", "ANY_STAGE_METHODS", "resolve_operand", "vrf_unread", "op_and_mode"]

S = VeStage


def _mapping(stage: StreamStage, loc: Location, name: str, value: Any) -> Poisoned | None:
    return mapping_args(stage, loc, name, packet=value)


def resolve_operand(stage: StreamStage, loc: Location, name: str, value: Any) -> Any:
    """The operand a kernel passed, as the traced op's `const`, or the TYPE-6 refusal."""
    if isinstance(value, Constant):
        return value.value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return value
    if isinstance(value, VrfTensorData):
        return refuse_dead(stage, loc, name, vrf_unread(name))
    return refuse_dead(stage, loc, name, kind_error(
        f"the operand of `{name}` must be a constant int or float, not {type(value).__name__}",
        help="pass a Python number; a VRF tensor is an operand of vector_fxp, vector_clip, "
             "vector_fp_binary and vector_fp_div (and their _with_mode forms); `Stash` is read where an "
             "operand is (FMA_F: `(Stash, c)`, c a number)"))


def op_and_mode(stage: Any, loc: Location, name: str, enums: Any, op: Any, mode: Any,
                modes: Any = E.BinaryArgMode) -> Any:
    """(op, mode) as values of `enums` and `modes` (a mode None stays None), or the refusal
    of the first that is not one (VE-ENUM-1 / VE-ENUM-4)."""
    op = vs._enum(stage, loc, name, enums, op)
    if not isinstance(op, Poisoned) and mode is not None:
        mode = vs._enum(stage, loc, name, modes, mode)
    return next((v for v in (op, mode) if isinstance(v, Poisoned)), (op, mode))


def binary(stage: Any, loc: Location, op_cls: type, dst: VeStage, enums: Any, op: Any, operand: Any,
           mode: Any = None, **fields: Any) -> Any:
    """A binary op: the op enum value, the mode (when given), the operand, the op's ALU."""
    name = op_cls.STAGE + ("_with_mode" if mode is not None else "")
    got = op_and_mode(stage, loc, name, enums, op, mode)
    if isinstance(got, Poisoned):
        return got
    op, mode = got
    if operand is Stash:
        return stash_step(stage, loc, name, op, vs._step, dst, mode=mode, **fields)
    if isinstance(operand, Branched):
        return branched_step(stage, loc, name, op, operand, vs._step, dst, mode)
    if _reads_vrf(op_cls, operand):
        return rf_step(stage, loc, op_cls, dst, op, operand, mode)
    const = resolve_operand(stage, loc, name, operand)
    if isinstance(const, Poisoned):
        return const
    return vs._step(stage, loc, op_cls, dst, op.alu, op=op, const=const, mode=mode, **fields)


def _reads_vrf(op_cls: type, operand: Any) -> bool:
    """A VRF tensor (or a refused call's stand-in) given to an op with a register-file form."""
    return "rf" in attrs.fields_dict(op_cls) and isinstance(operand, (VrfTensorData, Poisoned))


_LOGIC = (E.LogicBinaryOpI32, E.LogicBinaryOpF32)
_CLIP = (E.ClipBinaryOpI32, E.ClipBinaryOpF32)


@stage_method("vector_logic")
def _logic(self: Any, loc: Location, op: Any, operand: Any) -> Any:
    """Logic cluster: `op(stream, operand)` on the 32-bit patterns (i32: and / or / xor / shifts;
    f32: and / or / xor)."""
    return binary(self, loc, cops.VectorLogic, S.LOGIC, _LOGIC, op, operand)


@stage_method("vector_logic_with_mode")
def _logic_mode(self: Any, loc: Location, op: Any, mode: Any, operand: Any) -> Any:
    """`vector_logic` with the arguments `mode` (a BinaryArgMode) picks."""
    return binary(self, loc, cops.VectorLogic, S.LOGIC, _LOGIC, op, operand, mode)


@stage_method("vector_fxp_with_mode")
def _fxp_mode(self: Any, loc: Location, op: Any, mode: Any, operand: Any) -> Any:
    """`vector_fxp` with the arguments `mode` picks (MODE10 is `op(operand, stream)`)."""
    return binary(self, loc, vops.VectorFxp, S.FXP, E.FxpBinaryOp, op, operand, mode)


@stage_method("vector_clip_with_mode")
def _clip_mode(self: Any, loc: Location, op: Any, mode: Any, operand: Any) -> Any:
    """`vector_clip` with the arguments `mode` picks."""
    return binary(self, loc, vops.VectorClip, S.CLIP, _CLIP, op, operand, mode)


@stage_method("vector_fp_binary_with_mode")
def _fp_binary_mode(self: Any, loc: Location, op: Any, mode: Any, operand: Any) -> Any:
    """`vector_fp_binary` with the arguments `mode` picks (MODE10 of `SUB_F` is operand - stream)."""
    return binary(self, loc, vops.VectorFpBinary, S.FP, E.FpBinaryOp, op, operand, mode)


@stage_method("vector_fp_div")
def _fp_div(self: Any, loc: Location, operand: Any) -> Any:
    """FpDiv stage: stream / operand in f32 (the stage's one op, `FpDivBinaryOp.DIV_F`); the
    operand a constant or a VRF tensor (one divisor per stream cell, read by axis name)."""
    return binary(self, loc, cops.VectorFpDiv, S.FP_DIV, E.FpDivBinaryOp, E.FpDivBinaryOp.DIV_F, operand)


@stage_method("vector_fp_div_with_mode")
def _fp_div_mode(self: Any, loc: Location, mode: Any, operand: Any) -> Any:
    """`vector_fp_div` with the arguments `mode` picks (MODE10 is operand / stream)."""
    return binary(self, loc, cops.VectorFpDiv, S.FP_DIV, E.FpDivBinaryOp, E.FpDivBinaryOp.DIV_F, operand, mode)


def _ternary(stage: Any, loc: Location, name: str, op: Any, mode: Any, operands: Any) -> Any:
    got = op_and_mode(stage, loc, name, E.FpTernaryOp, op, mode, E.TernaryArgMode)
    if isinstance(got, Poisoned):
        return got
    op, mode = got
    if isinstance(operands, Branched):  # a pair per slot: Branched.imm(guard, (a, c)).rf(guard, (Stash, c))
        return branched_step(stage, loc, name, op, operands, vs._step, S.FP, mode)
    if not isinstance(operands, (tuple, list)) or len(operands) != 2:
        return refuse_dead(stage, loc, name, kind_error(
            f"the operands of `{name}` are a pair (rhs, c), not {type(operands).__name__} {operands!r}",
            help="FMA_F computes stream * rhs + c: write `(2.0, 0.5)`"))
    if operands[0] is Stash:  # (Stash, c): stream * stashed + c
        c = resolve_operand(stage, loc, name, operands[1])
        return c if isinstance(c, Poisoned) else stash_step(stage, loc, name, op, vs._step, S.FP, mode=mode, const1=c)
    rhs, c = (resolve_operand(stage, loc, name, v) for v in operands)
    if isinstance(rhs, Poisoned) or isinstance(c, Poisoned):
        return Poisoned(name)
    return vs._step(stage, loc, cops.VectorFpTernary, S.FP, op.alu, op=op, const=rhs, const1=c, mode=mode)


@stage_method("vector_fp_ternary")
def _fp_ternary(self: Any, loc: Location, op: Any, operands: Any) -> Any:
    """Float cluster: `FMA_F` with operands `(rhs, c)`: stream * rhs + c, rounded once."""
    return _ternary(self, loc, "vector_fp_ternary", op, None, operands)


@stage_method("vector_fp_ternary_with_mode")
def _fp_ternary_mode(self: Any, loc: Location, op: Any, mode: Any, operands: Any) -> Any:
    """`vector_fp_ternary` with the arguments `mode` (a TernaryArgMode) picks: 0 the stream,
    1 rhs, 2 c (MODE102 is rhs * stream + c)."""
    return _ternary(self, loc, "vector_fp_ternary_with_mode", op, mode, operands)


def _reshape(stage: Any, loc: Location, name: str, op_cls: type, dst: VeStage, time: Any, packet: Any) -> Any:
    return _mapping(stage, loc, name, time) or _mapping(stage, loc, name, packet) or vs._step(
        stage, loc, op_cls, dst, time=time, packet=packet)


@stage_method("vector_narrow_split")
def _narrow_split(self: Any, loc: Location, time2: Any, packet2: Any) -> Any:
    """8-way -> 4-way keeping both halves of each flit: `time2` is (Time, Packet / 4),
    `packet2` Packet % 4 (the back four cells become the innermost time step)."""
    return _reshape(self, loc, "vector_narrow_split", cops.VectorNarrowSplit, S.NARROW, time2, packet2)


@stage_method("vector_widen_concat")
def _widen_concat(self: Any, loc: Location, time2: Any, packet2: Any) -> Any:
    """4-way -> 8-way, undoing a split: `time2` is Time / 2, `packet2` (Time % 2, Packet)."""
    return _reshape(self, loc, "vector_widen_concat", cops.VectorWidenConcat, S.WIDEN, time2, packet2)


_SCALAR_OF = {DType.I32: "i32", DType.F32: "f32"}


def _shown(value: Any) -> str:
    """A dtype by its name (`i8`), anything else by its repr (`'i32'`, a string)."""
    return str(value) if isinstance(value, DType) else repr(value)


@stage_method("vector_reinterpret")
def _reinterpret(self: Any, loc: Location, d2: Any) -> Any:
    """The stream's bits reread as `d2` (i32 or f32); no ALU, the stage and way are kept."""
    if d2 not in _SCALAR_OF:
        return refuse_dead(self, loc, "vector_reinterpret", Violation(
            "VE-REINT-1", f"`vector_reinterpret` rereads the bits as i32 or f32, not {_shown(d2)}",
            help="pass `i32` or `f32`: the engine holds 32-bit values only"))
    return vs._step(self, loc, cops.VectorReinterpret, self.ve.stage, scalar_to=_SCALAR_OF[d2])


@stage_method("vector_filter")
def _filter(self: Any, loc: Location, time2: Any, config: Any) -> Any:
    """Filter stage: refused (VE-FILTER-1)."""
    return refuse_dead(self, loc, "vector_filter", Violation(
        "VE-FILTER-1", "`vector_filter` is not available: the reference's host model leaves the Filter stage "
        "unimplemented, so its exact output is not defined",
        help="end the chain with `vector_final()`; drop the unwanted elements after the commit"))


_BOTH, W8 = frozenset({"i32", "f32"}), Way.WAY8
# method -> its body (the name its `stage_method` gives it); the stage it enters, the scalars it
# takes and the way the stream must run at are its units' (`ir.vector.units.dsl_method`)
_CHAIN_BODIES: dict[str, Any] = {fn.stage_name: fn for fn in (
    _logic, _logic_mode, _fxp_mode, _narrow_split, _fp_binary_mode, _fp_ternary, _fp_ternary_mode,
    _fp_div, _fp_div_mode, _widen_concat, _clip_mode,
)}
CHAIN_METHODS: dict[str, tuple[VeStage, frozenset[str], Way, Any]] = {
    name: (*dsl_method(name), fn) for name, fn in _CHAIN_BODIES.items()}
CHAIN_METHODS.update({  # the stages without a unit
    "vector_filter": (S.FILTER, _BOTH, W8, _filter),
})
ANY_STAGE_METHODS = {"vector_reinterpret": _reinterpret}
