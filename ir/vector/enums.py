"""Every enum of the Vector Engine, named by the surface's enum rule.

A Rust enum is a class of the same name; variants are UPPER_SNAKE_CASE; a variant with
data is called (`FpBinaryOp.MUL_F(FpMulAlu.MUL0)`, `TagMode.AXIS_TOGGLE(axis=A)`).
`rust_name` keeps the reference's spelling. Op enums expose `.alu`, the `RngdAlu` the op
occupies: each ALU runs at most one op per Tensor Unit invocation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.errors import MappingError
from ir.mapping.axes import Axis, check_axis
from ir.vector.scalars import f32_constant, i32_constant
from ir.vector.variants import Field, RustEnum, Struct, Tuple, Unit, enum_field
from ir.words import a_an

__all__ = [
    "RngdAlu", "FpMulAlu", "LogicBinaryOpI32", "LogicBinaryOpF32", "FxpBinaryOp", "FpUnaryOp",
    "FpBinaryOp", "FpTernaryOp", "FpDivBinaryOp", "IntraSliceReduceOpI32", "IntraSliceReduceOpF32",
    "InterSliceReduceOpI32", "InterSliceReduceOpF32", "ClipBinaryOpI32", "ClipBinaryOpF32",
    "BinaryArgMode", "TernaryArgMode", "VeOrder", "Way", "BitReq", "GroupId", "Cmp",
    "TagMode",
]


class RngdAlu(RustEnum):
    """The Vector Engine's ALUs, by cluster; each is used at most once per configuration."""

    LOGIC_AND, LOGIC_OR, LOGIC_XOR = Unit("LogicAnd"), Unit("LogicOr"), Unit("LogicXor")
    LOGIC_LSHIFT, LOGIC_RSHIFT = Unit("LogicLshift"), Unit("LogicRshift")
    FXP_ADD, FXP_LSHIFT, FXP_MUL, FXP_RSHIFT = Unit("FxpAdd"), Unit("FxpLshift"), Unit("FxpMul"), Unit("FxpRshift")
    FP_FMA, FP_FPU, FP_EXP = Unit("FpFma"), Unit("FpFpu"), Unit("FpExp")
    FP_MUL0, FP_MUL1 = Unit("FpMul0"), Unit("FpMul1")
    CLIP_ADD, CLIP_MAX, CLIP_MIN = Unit("ClipAdd"), Unit("ClipMax"), Unit("ClipMin")
    REDUCE_ACC_TREE, REDUCE_FP_DIV = Unit("ReduceAccTree"), Unit("ReduceFpDiv")


class _HasAlu(RustEnum):
    """An op enum whose `_ALU` maps each variant name to its RngdAlu name."""

    _ALU: dict[str, str] = {}

    @property
    def alu(self) -> RngdAlu:
        """The ALU this op occupies."""
        return getattr(RngdAlu, type(self)._ALU[self.name])


class FpMulAlu(_HasAlu):
    """Which float ALU runs a `FpBinaryOp.MUL_F`: the two multipliers or the FMA unit."""

    MUL0, MUL1, FMA = Unit("Mul0"), Unit("Mul1"), Unit("Fma")
    _ALU = {"MUL0": "FP_MUL0", "MUL1": "FP_MUL1", "FMA": "FP_FMA"}


class LogicBinaryOpI32(_HasAlu):
    """Logic cluster ops on i32 bits (8-way)."""

    BIT_AND, BIT_OR, BIT_XOR = Unit("BitAnd"), Unit("BitOr"), Unit("BitXor")
    LEFT_SHIFT, LOGIC_RIGHT_SHIFT, ARITH_RIGHT_SHIFT = Unit("LeftShift"), Unit("LogicRightShift"), Unit("ArithRightShift")
    _ALU = {"BIT_AND": "LOGIC_AND", "BIT_OR": "LOGIC_OR", "BIT_XOR": "LOGIC_XOR", "LEFT_SHIFT": "LOGIC_LSHIFT",
            "LOGIC_RIGHT_SHIFT": "LOGIC_RSHIFT", "ARITH_RIGHT_SHIFT": "LOGIC_RSHIFT"}


class LogicBinaryOpF32(_HasAlu):
    """Logic cluster ops on the bit patterns of f32 values (8-way)."""

    BIT_AND, BIT_OR, BIT_XOR = Unit("BitAnd"), Unit("BitOr"), Unit("BitXor")
    _ALU = {"BIT_AND": "LOGIC_AND", "BIT_OR": "LOGIC_OR", "BIT_XOR": "LOGIC_XOR"}


class FxpBinaryOp(_HasAlu):
    """The eleven Fxp cluster ops on i32 (8-way)."""

    ADD_FXP, ADD_FXP_SAT = Unit("AddFxp"), Unit("AddFxpSat")
    SUB_FXP, SUB_FXP_SAT = Unit("SubFxp"), Unit("SubFxpSat")
    LEFT_SHIFT, LEFT_SHIFT_SAT = Unit("LeftShift"), Unit("LeftShiftSat")
    MUL_FXP, MUL_INT = Unit("MulFxp"), Unit("MulInt")
    LOGIC_RIGHT_SHIFT, ARITH_RIGHT_SHIFT = Unit("LogicRightShift"), Unit("ArithRightShift")
    ARITH_RIGHT_SHIFT_ROUND = Unit("ArithRightShiftRound")
    _ALU = {"ADD_FXP": "FXP_ADD", "ADD_FXP_SAT": "FXP_ADD", "SUB_FXP": "FXP_ADD", "SUB_FXP_SAT": "FXP_ADD",
            "LEFT_SHIFT": "FXP_LSHIFT", "LEFT_SHIFT_SAT": "FXP_LSHIFT", "MUL_FXP": "FXP_MUL",
            "MUL_INT": "FXP_MUL", "LOGIC_RIGHT_SHIFT": "FXP_RSHIFT", "ARITH_RIGHT_SHIFT": "FXP_RSHIFT",
            "ARITH_RIGHT_SHIFT_ROUND": "FXP_RSHIFT"}

    @property
    def is_shift(self) -> bool:
        """Whether the operand is a shift amount (constant amounts must lie in 0 ... 31)."""
        return self._ALU[self.name] in ("FXP_LSHIFT", "FXP_RSHIFT")


class FpUnaryOp(_HasAlu):
    """Float cluster unary ops on f32 (4-way)."""

    EXP, NEG_EXP, SQRT = Unit("Exp"), Unit("NegExp"), Unit("Sqrt")
    TANH, SIGMOID, ERF = Unit("Tanh"), Unit("Sigmoid"), Unit("Erf")
    LOG, SIN, COS = Unit("Log"), Unit("Sin"), Unit("Cos")
    _ALU = {"EXP": "FP_EXP", "NEG_EXP": "FP_EXP", **{n: "FP_FPU" for n in
            ("SQRT", "TANH", "SIGMOID", "ERF", "LOG", "SIN", "COS")}}


class FpBinaryOp(_HasAlu):
    """Float cluster binary ops on f32 (4-way); a multiply names the ALU that runs it."""

    ADD_F, SUB_F = Unit("AddF"), Unit("SubF")
    MUL_F = Tuple("MulF", Field("mul_alu", enum_field(FpMulAlu), "an FpMulAlu"))
    DIV_F = Unit("DivF")
    _ALU = {"ADD_F": "FP_FMA", "SUB_F": "FP_FMA", "DIV_F": "FP_FPU"}

    @property
    def alu(self) -> RngdAlu:
        return self.mul_alu.alu if self.name == "MUL_F" else super().alu


class FpTernaryOp(_HasAlu):
    """Float cluster ternary op: fused multiply-add (4-way)."""

    FMA_F = Unit("FmaF")
    _ALU = {"FMA_F": "FP_FMA"}


class FpDivBinaryOp(_HasAlu):
    """The FpDiv stage's op, on its dedicated divider (4-way)."""

    DIV_F = Unit("DivF")
    _ALU = {"DIV_F": "REDUCE_FP_DIV"}


class IntraSliceReduceOpI32(_HasAlu):
    """Intra-slice reduce ops on i32 (accumulator tree, 4-way)."""

    ADD_SAT, MAX, MIN = Unit("AddSat"), Unit("Max"), Unit("Min")
    _ALU = {n: "REDUCE_ACC_TREE" for n in ("ADD_SAT", "MAX", "MIN")}


class IntraSliceReduceOpF32(_HasAlu):
    """Intra-slice reduce ops on f32 (accumulator tree, 4-way)."""

    ADD, MAX, MIN = Unit("Add"), Unit("Max"), Unit("Min")
    _ALU = {n: "REDUCE_ACC_TREE" for n in ("ADD", "MAX", "MIN")}


class InterSliceReduceOpI32(RustEnum):
    """Inter-slice reducer ops on i32 (across the slices of a cluster)."""

    ADD, ADD_SAT, MAX, MIN = Unit("Add"), Unit("AddSat"), Unit("Max"), Unit("Min")


class InterSliceReduceOpF32(RustEnum):
    """Inter-slice reducer ops on f32."""

    ADD, MAX, MIN, MUL = Unit("Add"), Unit("Max"), Unit("Min"), Unit("Mul")


class ClipBinaryOpI32(_HasAlu):
    """Clip cluster ops on i32 (8-way)."""

    MIN, MAX, ABS_MIN, ABS_MAX = Unit("Min"), Unit("Max"), Unit("AbsMin"), Unit("AbsMax")
    ADD_FXP, ADD_FXP_SAT = Unit("AddFxp"), Unit("AddFxpSat")
    _ALU = {"MIN": "CLIP_MIN", "ABS_MIN": "CLIP_MIN", "MAX": "CLIP_MAX", "ABS_MAX": "CLIP_MAX",
            "ADD_FXP": "CLIP_ADD", "ADD_FXP_SAT": "CLIP_ADD"}


class ClipBinaryOpF32(_HasAlu):
    """Clip cluster ops on f32 (8-way)."""

    MIN, MAX, ABS_MIN, ABS_MAX, ADD = Unit("Min"), Unit("Max"), Unit("AbsMin"), Unit("AbsMax"), Unit("Add")
    _ALU = {"MIN": "CLIP_MIN", "ABS_MIN": "CLIP_MIN", "MAX": "CLIP_MAX", "ABS_MAX": "CLIP_MAX", "ADD": "CLIP_ADD"}


class BinaryArgMode(RustEnum):
    """Which values feed a binary op: MODEXY is op(argX, argY), 0 the stream, 1 the operand."""

    MODE00, MODE01, MODE10, MODE11 = Unit("Mode00"), Unit("Mode01"), Unit("Mode10"), Unit("Mode11")


class TernaryArgMode(RustEnum):
    """Which values feed a ternary op: MODEXYZ is op(argX, argY, argZ), 0 the stream,
    1 the first operand, 2 the second."""

    MODE012, MODE002, MODE102, MODE112 = Unit("Mode012"), Unit("Mode002"), Unit("Mode102"), Unit("Mode112")
    MODE020, MODE021, MODE120 = Unit("Mode020"), Unit("Mode021"), Unit("Mode120")


class VeOrder(RustEnum):
    """Which Vector Engine block a stream enters first: the intra-slice chain or the
    inter-slice reducer."""

    INTRA_FIRST, INTER_FIRST = Unit("IntraFirst"), Unit("InterFirst")


class Way(RustEnum):
    """Packet width in the engine: 8 elements per flit, or 4 (the float path's front half)."""

    WAY8, WAY4 = Unit("Way8"), Unit("Way4")


class BitReq(RustEnum):
    """Requirement on one execution-id bit of a tag guard."""

    ONE, ZERO, IGNORE = Unit("One"), Unit("Zero"), Unit("Ignore")


class GroupId(RustEnum):
    """One of the two element groups: bit 3 of the execution id."""

    ZERO, ONE = Unit("Zero"), Unit("One")


def _boundary(value: Any) -> Any:
    """A comparison boundary: an int is an i32 boundary (a Python int), a float an f32 one
    (an np.float32); VE-CONST-* on a constant out of range."""
    if isinstance(value, (float, np.floating)):
        return f32_constant(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return i32_constant(value)
    raise ValueError(f"got {value!r} ({type(value).__name__})")


_BOUND = Field("boundary", _boundary, "an int (i32) or a float (f32)")


class Cmp(RustEnum):
    """One comparison of the tag unit, setting one execution-id bit per element."""

    EQUAL, LESS, GREATER = Tuple("Equal", _BOUND), Tuple("Less", _BOUND), Tuple("Greater", _BOUND)
    LESS_UNSIGNED, GREATER_UNSIGNED = Tuple("LessUnsigned", _BOUND), Tuple("GreaterUnsigned", _BOUND)
    TRUE, FALSE = Unit("True"), Unit("False")

    @property
    def scalar(self) -> str | None:
        """"i32" or "f32" for a comparison with a boundary, None for TRUE / FALSE."""
        if not self.values:
            return None
        return "f32" if isinstance(self.values[0], np.float32) else "i32"


def _axis(value: Any) -> str:
    if isinstance(value, Axis):
        return value.name
    if isinstance(value, str):
        try:
            check_axis(value, 1)
        except MappingError:
            raise ValueError(f"{value!r} is not an axis name") from None
        return value
    raise ValueError(f"got {a_an(type(value).__name__)} ({value!r})")


def _four_cmps(value: Any) -> tuple:
    # The caller's message already says "takes a list of four Cmp": say what was wrong.
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"got {a_an(type(value).__name__)} ({value!r})")
    if len(value) != 4:
        raise ValueError(f"got {len(value)}: {value!r}")
    for c in value:
        if not isinstance(c, Cmp):
            raise ValueError(f"{c!r} needs its boundary, e.g. {c!r}(0)" if callable(c) else f"{c!r} is not a Cmp")
    scalars = {c.scalar for c in value} - {None}
    if len(scalars) > 1:
        raise ValueError(f"the four comparisons mix i32 and f32 boundaries: {list(value)!r}")
    return tuple(value)


class TagMode(RustEnum):
    """How the tag unit computes each element's execution id."""

    ZERO = Unit("Zero")
    AXIS_TOGGLE = Struct("AxisToggle", Field("axis", _axis, "an axis (or its name)"))
    COMPARISON = Tuple("Comparison", Field("cmps", _four_cmps, "a list of four Cmp"))
