"""The lowered Vector Engine pass: one `vector` record per `vector_init ... vector_final`.

Text: `%7 = vector in=%6 steps=[{unit=TAG, op=ZERO, arg=0}, {unit=FXP, op=MUL_INT, arg=3},
{unit=CLIP_I32, op=MAX, arg=0}] : <stream> -> <stream>`. A step's `arg` is its constant
operand (an i32, or the bit pattern of an f32 constant) or a conversion's int_width. The
interpreter runs the steps in order (`ir.vector.numerics.steps`). Rules VEOP-1 (the steps
type the stream), VEOP-2 (stage order and one op per ALU), VEOP-3 (each step's arg).

A step may also carry `mode` (an argument mode other than the default MODE01 / MODE012)
and `arg1` (the second constant of `FP_TERNARY`); both are printed only when set, so a
step without them reads `{unit=FXP, op=MUL_INT, arg=3}`.
VEOP-4 (`_RF` steps only in a `vector_rf` record, `tu_ops.vrf`), VEOP-7 (an intra-slice reduce
step, `INTRA_REDUCE_I32` / `_F32` with arg 1 when the packet becomes `1 # 4`: the input and
output types differ by exactly the reduced axis, `ir.vector.intra_reduce`; the reduce of a
padded axis carries `vcg={filters=[...], clipper={...}}`, the Valid Count Generator's
configuration for its stream, printed only when set: docs/machine/valid-count.md).
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs

from ir.dtypes import DType
from ir.errors import MappingError
from ir.vector import enums as E
from ir.vector import ways
from ir.vector.numerics.steps import UNITS
from tu_ops.base import Ref, TuOp, VerifyContext, attr, operand, rule
from tu_ops.engines import VECTOR, Engine, no_counters, stream_cycles
from tu_ops.enums import DestKind, FeedElementType
from tu_ops.valid_count import PackConfig

__all__ = ["VeUnit", "VeOpName", "VeMode", "VeStep", "VectorEngineOp", "stream_before"]


class VeUnit(enum.Enum):
    """The stage (and scalar) a step runs on, in pipeline order."""

    TAG = "tag"
    FXP = "fxp"
    FXP_TO_FP = "fxp_to_fp"
    NARROW_TRIM = "narrow_trim"
    FP_UNARY = "fp_unary"
    FP_BINARY = "fp_binary"
    WIDEN_PAD = "widen_pad"
    FP_TO_FXP = "fp_to_fxp"
    CLIP_I32 = "clip_i32"
    CLIP_F32 = "clip_f32"
    # the rest of the element-wise chain
    LOGIC_I32 = "logic_i32"
    LOGIC_F32 = "logic_f32"
    NARROW_SPLIT = "narrow_split"
    FP_TERNARY = "fp_ternary"
    FP_DIV = "fp_div"
    WIDEN_CONCAT = "widen_concat"
    REINTERPRET = "reinterpret"
    FXP_RF = "fxp_rf"
    FP_BINARY_RF = "fp_binary_rf"
    CLIP_I32_RF = "clip_i32_rf"
    CLIP_F32_RF = "clip_f32_rf"
    FP_DIV_RF = "fp_div_rf"
    INTRA_REDUCE_I32 = "intra_reduce_i32"
    INTRA_REDUCE_F32 = "intra_reduce_f32"


# unit -> the op enum whose variant names its `op` takes (None: `NONE` / the tag mode)
_OP_ENUMS: dict[VeUnit, Any] = {VeUnit.FXP: E.FxpBinaryOp, VeUnit.CLIP_I32: E.ClipBinaryOpI32,
                                VeUnit.CLIP_F32: E.ClipBinaryOpF32, VeUnit.FP_UNARY: E.FpUnaryOp,
                                VeUnit.FP_BINARY: E.FpBinaryOp, VeUnit.LOGIC_I32: E.LogicBinaryOpI32,
                                VeUnit.LOGIC_F32: E.LogicBinaryOpF32, VeUnit.FP_TERNARY: E.FpTernaryOp,
                                VeUnit.FP_DIV: E.FpDivBinaryOp}
_OP_ENUMS.update({VeUnit.FXP_RF: E.FxpBinaryOp, VeUnit.CLIP_I32_RF: E.ClipBinaryOpI32,
                  VeUnit.CLIP_F32_RF: E.ClipBinaryOpF32, VeUnit.FP_BINARY_RF: E.FpBinaryOp,
                  VeUnit.FP_DIV_RF: E.FpDivBinaryOp})
_OP_ENUMS.update({VeUnit.INTRA_REDUCE_I32: E.IntraSliceReduceOpI32, VeUnit.INTRA_REDUCE_F32: E.IntraSliceReduceOpF32})
_REDUCE = frozenset({VeUnit.INTRA_REDUCE_I32, VeUnit.INTRA_REDUCE_F32})
_ORDER = {VeUnit.TAG: 0, VeUnit.FXP: 1, VeUnit.FXP_TO_FP: 2, VeUnit.NARROW_TRIM: 3, VeUnit.FP_UNARY: 4,
          VeUnit.FP_BINARY: 4, VeUnit.WIDEN_PAD: 5, VeUnit.FP_TO_FXP: 6, VeUnit.CLIP_I32: 7, VeUnit.CLIP_F32: 7,
          VeUnit.LOGIC_I32: 0.5, VeUnit.LOGIC_F32: 0.5, VeUnit.NARROW_SPLIT: 3, VeUnit.FP_TERNARY: 4,
          VeUnit.FP_DIV: 4.5, VeUnit.WIDEN_CONCAT: 5,
          VeUnit.INTRA_REDUCE_I32: 4.25, VeUnit.INTRA_REDUCE_F32: 4.25, VeUnit.FXP_RF: 1, VeUnit.FP_BINARY_RF: 4,
          VeUnit.CLIP_I32_RF: 7, VeUnit.CLIP_F32_RF: 7, VeUnit.FP_DIV_RF: 4.5}  # REINTERPRET holds its place: no order
_REPEATABLE = frozenset({VeUnit.FXP, VeUnit.CLIP_I32, VeUnit.CLIP_F32, VeUnit.FP_UNARY, VeUnit.FP_BINARY,
                         VeUnit.LOGIC_I32, VeUnit.LOGIC_F32, VeUnit.FP_TERNARY, VeUnit.FXP_RF,
                         VeUnit.CLIP_I32_RF, VeUnit.CLIP_F32_RF, VeUnit.FP_BINARY_RF})
_FOUR_WAY = frozenset({VeUnit.FP_UNARY, VeUnit.FP_BINARY, VeUnit.WIDEN_PAD,  # units that read a 4-way stream
                       VeUnit.FP_TERNARY, VeUnit.FP_DIV, VeUnit.WIDEN_CONCAT, VeUnit.FP_BINARY_RF,
                       VeUnit.FP_DIV_RF, *_REDUCE})
_NARROW = frozenset({VeUnit.NARROW_TRIM, VeUnit.NARROW_SPLIT})
_WIDEN = frozenset({VeUnit.WIDEN_PAD, VeUnit.WIDEN_CONCAT})
_SCALAR = {DType.I32: "i32", DType.F32: "f32"}
_SHAPES = {VeUnit.NARROW_TRIM: ways.trim_shape, VeUnit.NARROW_SPLIT: ways.split_shape,
           VeUnit.WIDEN_PAD: ways.pad_shape, VeUnit.WIDEN_CONCAT: ways.concat_shape}


def _reshape(unit: VeUnit, shape: tuple, before_trim: Any) -> tuple[tuple, Any]:
    """(time, packet) after a step, and the shape a trim left (a pad after a trim restores it)."""
    if unit is VeUnit.WIDEN_PAD and before_trim is not None:
        return before_trim, None
    if unit not in _SHAPES:
        return shape, before_trim
    return _SHAPES[unit](*shape), (shape if unit is VeUnit.NARROW_TRIM else None)

_MULS = tuple(f"MUL_F_{alu.name}" for alu in E.FpMulAlu)
VeOpName = enum.Enum("VeOpName", {name: name for name in dict.fromkeys(
    ["ZERO", "NONE", *(v.name for cls in _OP_ENUMS.values() for v in cls if v.name != "MUL_F"), *_MULS,
     "TO_I32", "TO_F32"])})
VeOpName.__doc__ = "A step's op: a variant name of its unit's op enum, `ZERO` (tag) or `NONE` (conversion)."


VeMode = enum.Enum("VeMode", {name: name for name in (
    "DEFAULT", *(v.name for v in E.BinaryArgMode), *(v.name for v in E.TernaryArgMode))})
VeMode.__doc__ = "A step's argument mode: DEFAULT (MODE01 / MODE012) or a BinaryArgMode / TernaryArgMode name."


@attrs.frozen
class VeStep:
    """One configured stage of the pass."""

    TEXT_STYLE: ClassVar[str] = "struct"
    unit: VeUnit
    op: VeOpName
    arg: int
    mode: VeMode = attrs.field(default=VeMode.DEFAULT, metadata={"omit_default": True})
    arg1: int = attrs.field(default=0, metadata={"omit_default": True})
    vcg: PackConfig | None = attrs.field(default=None, metadata={"omit_default": True})  # a padded reduce's counts


def stream_before(time: Any, packet: Any, steps: tuple[VeStep, ...], index: int) -> tuple[Any, Any]:
    """(time, packet) of the stream step `index` reads, from the record's input (time, packet):
    the way changes before it applied (a split doubles the time; a reduce keeps the shape).
    Every step before `index` counts: a `vector` record's leading TAG step changes no shape, and
    a `vector_branch` record has none (its first step may be the split)."""
    shape, before_trim = (time, packet), None
    for step in steps[:index]:
        shape, before_trim = _reshape(step.unit, shape, before_trim)
    return shape


def _op_value(step: VeStep) -> Any | None:
    """The op enum value a step names (None for a unit without one, or a name not of it)."""
    cls = _OP_ENUMS.get(step.unit)
    if cls is E.FpBinaryOp and step.op.name in _MULS:
        return E.FpBinaryOp.MUL_F(getattr(E.FpMulAlu, step.op.name[len("MUL_F_"):]))
    value = getattr(cls, step.op.name, None) if cls is not None else None
    return value if isinstance(value, E.RustEnum) else None


@attrs.frozen(kw_only=True)
class VectorEngineOp(TuOp):
    """The Vector Engine configured for one pass over the stream."""

    NAME: ClassVar[str] = "tu.vector"
    MNEMONIC: ClassVar[str] = "vector"
    PIPELINE_RANK: ClassVar[int] = 70
    FEED_DEST: ClassVar[Any] = DestKind.VECTOR
    FEED_ELEMENTS: ClassVar[frozenset[Any]] = frozenset({FeedElementType.I32, FeedElementType.F32})
    IN_KINDS: ClassVar[tuple[str, ...]] = ("stream",)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("stream",)
    ENGINE: ClassVar[Engine] = VECTOR
    busy_cycles = stream_cycles
    cost_counters = no_counters

    input: Ref = operand(name="in")
    steps: tuple[VeStep, ...] = attr()

    @rule("VEOP-1")
    def _typing(self, target: Any, ctx: VerifyContext | None) -> str | None:
        t, out = self.input_type, self.output_type
        scalar = _SCALAR.get(t.dtype)
        if scalar is None or t.packet.size != 8:
            return f"the engine takes 8 x i32 or 8 x f32 per step, not {t.packet.size} x {t.dtype}"
        if not self.steps or self.steps[0].unit is not VeUnit.TAG:
            return "a pass starts with its TAG step"
        four_way, shape, before_trim = False, (t.time, t.packet), None
        for i, step in enumerate(self.steps[1:], start=1):
            src, dst = UNITS[step.unit.name]
            if src not in ("any", scalar):
                return f"step {i} ({step.unit.name}) reads {src}, the stream holds {scalar}"
            if step.unit is not VeUnit.REINTERPRET and four_way != (step.unit in _FOUR_WAY):
                return f"step {i} ({step.unit.name}) on a {'4' if four_way else '8'}-way stream"
            if dst == "op":  # a reinterpret names its scalar (VEOP-3 checks the name)
                scalar = {"TO_I32": "i32", "TO_F32": "f32"}.get(step.op.name, scalar)
            elif dst != "same":
                scalar = dst
            try:
                shape, before_trim = _reshape(step.unit, shape, before_trim)
            except MappingError as e:
                return f"step {i} ({step.unit.name}) cannot reshape the stream: {e}"
            four_way = (four_way or step.unit in _NARROW) and step.unit not in _WIDEN
        if four_way:
            return "the pass ends 4-way: a WIDEN_PAD or WIDEN_CONCAT step must follow the float steps"
        reduced = any(s.unit in _REDUCE for s in self.steps)  # VEOP-7 checks a reduce's shape
        if not reduced and not (shape[0].equivalent(out.time) and shape[1].equivalent(out.packet)):
            return f"the steps leave time {shape[0]}, packet {shape[1]}; the output stream has {out.time}, {out.packet}"
        if _SCALAR.get(out.dtype) != scalar:
            return f"the steps leave {scalar}, the output stream holds {out.dtype}"
        return None

    @rule("VEOP-2")
    def _order(self, target: Any, ctx: VerifyContext | None) -> str | None:
        alus: set[str] = set()
        placed = [(i, step) for i, step in enumerate(self.steps) if step.unit in _ORDER]  # a reinterpret holds its place
        for (_, prev), (i, step) in zip(placed, placed[1:]):
            a, b = _ORDER[prev.unit], _ORDER[step.unit]
            if b < a or (a == b and step.unit not in _REPEATABLE):
                return f"step {i} ({step.unit.name}) may not follow {prev.unit.name}"
        for i, step in enumerate(self.steps):
            value = _op_value(step)
            if value is not None:
                if value.alu.name in alus:
                    return f"step {i} uses the {value.alu.rust_name} ALU a second time"
                alus.add(value.alu.name)
        return None

    @rule("VEOP-3")
    def _args(self, target: Any, ctx: VerifyContext | None) -> str | None:
        for i, step in enumerate(self.steps):
            problem = _arg_problem(step)
            if problem:
                return f"step {i} ({step.unit.name}): {problem}"
        return None

    @rule("VEOP-7")
    def _reduce(self, target: Any, ctx: VerifyContext | None) -> str | None:
        from tu_ops.vector_reduce import reduce_problem

        return reduce_problem(self)

    @rule("VEOP-4")
    def _rf_port(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if self.MNEMONIC == "vector" and any(s.unit.name.endswith("_RF") for s in self.steps):
            return "a register-file step needs a `vector_rf` record, which names the VRF tensor it reads"
        return None


_BINARY = frozenset({VeUnit.FXP, VeUnit.CLIP_I32, VeUnit.CLIP_F32, VeUnit.FP_BINARY, VeUnit.LOGIC_I32,
                     VeUnit.LOGIC_F32, VeUnit.FP_DIV, VeUnit.FXP_RF, VeUnit.CLIP_I32_RF, VeUnit.CLIP_F32_RF,
                     VeUnit.FP_BINARY_RF, VeUnit.FP_DIV_RF})  # an RF operand is the op's argument 1
_BINARY_MODES = frozenset(v.name for v in E.BinaryArgMode)
_TERNARY_MODES = frozenset(v.name for v in E.TernaryArgMode)


def _mode_problem(step: VeStep) -> str | None:
    """A mode only on a binary or ternary step, of its kind; arg1 only on FP_TERNARY."""
    mode = step.mode.name
    if step.arg1 and step.unit is not VeUnit.FP_TERNARY:
        return f"only FP_TERNARY takes a second constant (arg1), not {step.unit.name}"
    if step.unit is VeUnit.FP_TERNARY and not 0 <= step.arg1 < 2**32:
        return f"arg1 {step.arg1} is not an f32 bit pattern"
    if mode == "DEFAULT":
        return None
    allowed = _BINARY_MODES if step.unit in _BINARY else _TERNARY_MODES if step.unit is VeUnit.FP_TERNARY else ()
    return None if mode in allowed else f"mode {mode} is not an argument mode of {step.unit.name}"


def _arg_problem(step: VeStep) -> str | None:
    problem = _mode_problem(step)
    if problem:
        return problem
    value, a = _op_value(step), step.arg
    if step.unit is VeUnit.REINTERPRET:
        ok = step.op.name in ("TO_I32", "TO_F32") and a == 0
        return None if ok else f"a reinterpret is TO_I32 or TO_F32 with arg 0, not {step.op.name} {a}"
    if step.unit is VeUnit.TAG:
        return None if (step.op.name, a) == ("ZERO", 0) else f"the tag is ZERO with arg 0, not {step.op.name} {a}"
    if step.unit in (VeUnit.FXP_TO_FP, VeUnit.FP_TO_FXP):
        ok = step.op.name == "NONE" and 0 <= a <= 31
        return None if ok else f"a conversion is NONE with an int_width in 0 ... 31, not {step.op.name} {a}"
    if step.unit in _NARROW | _WIDEN:
        return None if (step.op.name, a) == ("NONE", 0) else f"a way change is NONE with arg 0, not {step.op.name} {a}"
    if value is None:
        return f"{step.op.name} is not an op of this unit"
    if step.unit is VeUnit.FP_UNARY:
        return None if a == 0 else f"a unary op takes no constant (arg 0), not {a}"
    if step.unit in _REDUCE:
        return None if a in (0, 1) else f"a reduce keeps (0) or reduces (1) the packet, not {a}"
    if step.unit.name.endswith("_RF"):
        return None if a >= 0 else f"a register-file step's arg is the index of its VRF tensor, not {a}"
    if step.unit in (VeUnit.CLIP_F32, VeUnit.FP_BINARY, VeUnit.FP_TERNARY, VeUnit.FP_DIV, VeUnit.LOGIC_F32):
        return None if 0 <= a < 2**32 else f"arg {a} is not an f32 bit pattern"
    if not -(2**31) <= a < 2**31:
        return f"constant {a} does not fit i32"
    shift = getattr(value, "is_shift", False) or (step.unit is VeUnit.LOGIC_I32 and "SHIFT" in step.op.name)
    if shift and step.mode.name in ("DEFAULT", "MODE01", "MODE11") and not 0 <= a <= 31:  # the constant is the amount
        return f"shift amount {a} is outside 0 ... 31"
    return None
