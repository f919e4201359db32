"""Traced ops of the Vector Engine's intra-slice chain with constant operands.

One op per stage call between `vector_init()` and `vector_final()`: each types its own
result (the stream, with the dtype a conversion makes) and declares its rules. The value
checks are `ir.vector.scalars`' (VE-CONST-*, VE-SHIFT-1, VE-CONV-1), run as the op's rules
so the refusal carries the op and the user's line. `FOLDED` ops lower into the one
`vector` record made at `vector_init` (`tu_ops.lower.vector`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.mapping.nodes import Mapping
from ir.op_frame import attr, rule
from ir.ops import InputOp, Value
from ir.types import Type
from ir.vector import enums as E
from ir.vector import scalars
from ir.vector.units import encode_step
from ir.vector.errors import VectorRuleError
from ir.vrf_ops import rf_mismatch
from ir.words import a_an

__all__ = ["VectorInit", "VectorTag", "VectorFxp", "VectorClip", "VectorFxpToFp", "VectorFpToFxp",
           "VectorNarrowTrim", "VectorFpUnary", "VectorFpBinary", "VectorWidenPad", "VectorFinal",
           "SCALARS", "amount_is_const", "Conversion", "clip_family", "logic_family", "trim_back_is_dummy",
           "trim_front", "pad_padded"]

# The two scalars the engine holds, by stream dtype.
SCALARS = {DType.I32: "i32", DType.F32: "f32"}


def amount_is_const(mode: Any) -> bool:
    """Whether a shift's amount (its second argument) is the constant under `mode`."""
    return mode is None or mode.name[5] == "1"


def _checked(check: Any, *args: Any) -> Violation | None:
    """The violation a `scalars` check raises, or None."""
    try:
        check(*args)
    except VectorRuleError as e:
        return e.violation()
    return None


def _first_fault(check: Any, values: Any) -> Violation | None:
    """The violation of the first of `values` the `scalars` check refuses, or None."""
    for value in values:
        found = _checked(check, value)
        if found is not None:
            return found
    return None


# The constant rules of a step's `const`, shared by the ops that take one (assigned in a class body).
@rule("VE-CONST-3")
def _i32_kind(self: Any) -> Violation | None:
    return None if isinstance(self.const, int) else _checked(scalars.i32_constant, self.const)


@rule("VE-CONST-1")
def _i32_range(self: Any) -> Violation | None:
    return _checked(scalars.i32_constant, self.const)


@rule("VE-CONST-3")
def _f32_kind(self: Any) -> Violation | None:
    return _checked(scalars.f32_constant, self.const)


@rule("VE-SHIFT-1")
def _shift(self: Any) -> Violation | None:
    """A constant shift amount (an op named *SHIFT*, its amount the constant under the mode)."""
    if "SHIFT" in self.op.name and amount_is_const(self.mode):
        return _checked(scalars.shift_amount, self.const)
    return None


@attrs.frozen(kw_only=True)
class VectorOp(InputOp):
    """Base of the chain's ops: the stream flows through with its type unless the op says."""

    FOLDED: ClassVar[bool] = True
    SAME_TYPE_AS = "input"

    def step(self) -> tuple[str, str, int] | None:
        """(unit, op name, arg) of the engine step this op configures (`ir.vector.numerics.steps`),
        None for the entry and exit."""
        return None

    @property
    def scalar(self) -> str | None:
        """"i32" or "f32": the scalar of the input stream (None for any other dtype)."""
        return SCALARS.get(self.input.type.dtype)


@attrs.frozen(kw_only=True)
class UnitOp(VectorOp):
    """An op that configures one engine step: its unit's codec encodes it (`ir.vector.units`)."""

    def step(self) -> tuple:
        return encode_step(self)


@attrs.frozen(kw_only=True)
class RfUnitOp(UnitOp):
    """A step whose operand may instead be read from VRF tensors (`rf`, held to them by VRF-2)."""

    rf: tuple[Value, ...] = attrs.field(default=(), metadata={"role": "operand", "name": None})

    _rf_match = rf_mismatch


@attrs.frozen(kw_only=True)
class VectorInit(VectorOp):
    """Enter the Vector Engine with an i32 or f32 stream of one 8-element flit per step."""

    STAGE = "vector_init"
    FOLDED = False

    @rule("VE-INIT-1")
    def _init_dtype(self) -> Violation | None:
        d = self.input.type.dtype
        if self.scalar is None:
            return Violation("VE-INIT-1", f"the Vector Engine holds i32 and f32 values, not {d}",
                             label=f"this stream holds {d}",
                             help="widen it first: `.fetch_cast(i32)` / `.fetch_cast(f32)` before collect, "
                                  "or enter after a contraction (its result is i32 or f32)")
        return None


@attrs.frozen(kw_only=True)
class VectorTag(UnitOp):
    """The chain's entry: every element gets tag 0 (`TagMode.ZERO`)."""

    STAGE = "vector_intra_slice_tag"
    mode: Any = attr()


def _dtype_fault(op: Any, allowed: dict[str, type]) -> Violation | None:
    """VE-DTYPE-1: the op enum does not belong to the stream's scalar."""
    want = allowed.get(op.scalar)
    if want is not None and isinstance(op.op, want):
        return None
    other = ", ".join(f"{cls.__name__} on {s}" for s, cls in allowed.items())
    return Violation("VE-DTYPE-1", f"`{op.STAGE}` with {type(op.op).__name__} on {a_an(op.input.type.dtype)} stream",
                     label=f"`{op.STAGE}` takes {other}",
                     help=f"use the {allowed[op.scalar].__name__ if op.scalar in allowed else 'matching'} "
                          f"enum, or convert the stream first")


# The VE-DTYPE-1 rules of the two clusters whose ops come in an i32 and an f32 enum (assigned in a class body).
@rule("VE-DTYPE-1")
def clip_family(self: Any) -> Violation | None:
    """VE-DTYPE-1: a clip op of the other scalar's enum."""
    return _dtype_fault(self, {"i32": E.ClipBinaryOpI32, "f32": E.ClipBinaryOpF32})


@rule("VE-DTYPE-1")
def logic_family(self: Any) -> Violation | None:
    """VE-DTYPE-1: a logic op of the other scalar's enum."""
    return _dtype_fault(self, {"i32": E.LogicBinaryOpI32, "f32": E.LogicBinaryOpF32})


@attrs.frozen(kw_only=True)
class VectorFxp(RfUnitOp):
    """Fxp cluster: `op(stream, const)` on i32 (wrapping, saturating, shifting, rounding as named)."""

    STAGE = "vector_fxp"
    op: E.FxpBinaryOp = attr()
    const: Any = attr()
    mode: Any = attr(default=None)  # a BinaryArgMode (`vector_fxp_with_mode`); None is MODE01

    _i32_kind = _i32_kind  # the shared constant rules (the attribute keeps the rule's name)
    _i32_range = _i32_range
    _shift = _shift


@attrs.frozen(kw_only=True)
class VectorClip(RfUnitOp):
    """Clip cluster: `op(stream, const)` on i32 or f32 (ReLU is `MAX` with 0)."""

    STAGE = "vector_clip"
    op: Any = attr()
    const: Any = attr()
    mode: Any = attr(default=None)

    _family = clip_family

    @rule("VE-CONST-3")
    def _const_kind(self) -> Violation | None:
        if self.scalar == "i32" and not isinstance(self.const, int):
            return _checked(scalars.i32_constant, self.const)
        return _checked(scalars.f32_constant, self.const) if self.scalar == "f32" else None

    @rule("VE-CONST-1")
    def _const_range(self) -> Violation | None:
        return _checked(scalars.i32_constant, self.const) if self.scalar == "i32" else None

    @rule("VE-CONST-2")
    def _const_overflow(self) -> Violation | None:
        return None if self.scalar == "i32" else _checked(scalars.f32_constant, self.const)


@attrs.frozen(kw_only=True)
class Conversion(VectorOp):
    """Base of the fxp <-> fp conversions (single stream and pair): the stream becomes `DST`
    values; `int_width` is the integer bits of the fixed-point side (VE-CONV-1)."""

    DST: ClassVar[DType] = DType.I32
    int_width: Any = attr()

    def infer_type(self) -> Type:
        return attrs.evolve(self.input.type, dtype=self.DST)

    @rule("VE-CONV-1")
    def _width(self) -> Violation | None:
        return _checked(scalars.int_width, self.int_width)


@attrs.frozen(kw_only=True)
class VectorFxpToFp(Conversion, UnitOp):
    """i32 fixed point with `int_width` integer bits -> f32 (`x / 2**(31 - int_width)`)."""

    STAGE = "vector_fxp_to_fp"
    DST = DType.F32


@attrs.frozen(kw_only=True)
class VectorFpToFxp(Conversion, UnitOp):
    """f32 -> i32 fixed point with `int_width` integer bits (rounded half away from zero, clamped)."""

    STAGE = "vector_fp_to_fxp"
    DST = DType.I32


def _cells(mapping: Mapping, n: int) -> list[Any]:
    return [mapping.cell(p) for p in range(n)]


def _is_padding(cell: Any) -> bool:
    return type(cell).__name__ == "Padding"


@rule("VE-TRIM-2")
def trim_back_is_dummy(op: Any) -> Violation | None:
    """A trimmed packet is one flit whose back four cells are padding (a stream's, or each
    group's of a pair: the rule of both ops)."""
    p = op.input.type.packet
    if p.size == 8 and all(_is_padding(c) for c in _cells(p, 8)[4:]):
        return None
    return Violation("VE-TRIM-2", f"`vector_narrow_trim` would drop data: packet {p} holds data past its "
                     "fourth cell", label="the back four lanes of the flit are not padding",
                     help="trim only a packet of at most four elements padded to eight, e.g. `E % 4 # 8`")


@rule("VE-TRIM-4")
def trim_front(op: Any) -> Violation | None:
    """The trimmed packet is the front four cells of the flit."""
    p = op.input.type.packet
    if op.packet.size == 4 and _cells(op.packet, 4) == _cells(p, 4):
        return None
    return Violation("VE-TRIM-4", f"the trimmed packet {op.packet} is not the front four cells of {p}",
                     help="declare the input packet without its padding")


@rule("VE-PAD-3")
def pad_padded(op: Any) -> Violation | None:
    """The widened packet is the four-cell packet padded to a flit."""
    p, out = op.input.type.packet, op.packet
    if out.size == 8 and _cells(out, 4) == _cells(p, 4) and all(_is_padding(c) for c in _cells(out, 8)[4:]):
        return None
    return Violation("VE-PAD-3", f"the widened packet {out} is not {p} padded to eight cells",
                     help=f"write `m(\"{p} # 8\")`")


@attrs.frozen(kw_only=True)
class VectorNarrowTrim(UnitOp):
    """8-way -> 4-way for the float path: keep the front four cells of each flit, whose back
    four hold no data."""

    STAGE = "vector_narrow_trim"
    RETYPED = ("packet",)
    packet: Mapping = attr()

    _back_is_dummy = trim_back_is_dummy
    _front = trim_front


@attrs.frozen(kw_only=True)
class VectorWidenPad(UnitOp):
    """4-way -> 8-way after the float path: each 4-cell packet padded back to one flit."""

    STAGE = "vector_widen_pad"
    RETYPED = ("packet",)
    packet: Mapping = attr()

    _padded = pad_padded


@attrs.frozen(kw_only=True)
class VectorFpUnary(UnitOp):
    """Float cluster: `op(stream)` on f32 (exp, sqrt, tanh, sigmoid, ...)."""

    STAGE = "vector_fp_unary"
    op: E.FpUnaryOp = attr()


@attrs.frozen(kw_only=True)
class VectorFpBinary(RfUnitOp):
    """Float cluster: `op(stream, const)` on f32, IEEE round to nearest even."""

    STAGE = "vector_fp_binary"
    op: E.FpBinaryOp = attr()
    const: Any = attr()
    mode: Any = attr(default=None)

    _f32_kind = _f32_kind


@attrs.frozen(kw_only=True)
class VectorFinal(VectorOp):
    """Leave the Vector Engine: the stream goes on to `cast` or `commit_trim`."""

    STAGE = "vector_final"
