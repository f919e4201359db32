"""The codecs of the Vector Engine's units (`ir.vector.units`): each a map from a unit's
traced op to the record's step fields `(unit, op, arg, mode, arg1)`.

`encode(spec, op)` gives a traced op's step tuple (its `step()`, which the lowering puts in
the record). `elementwise` is the codec of every element-wise unit: a traced `op` / `const` /
`const1` / `mode` (and an `rf` operand for the `_RF` form) map to the step's op / arg / arg1 / mode.

A codec names its traced op classes by `TracedRef`s (`VECTOR_OPS.VectorFxp`): the modules
defining them import `ir.vector.units`, so each is resolved on first use, by a function that
imports its module. `GENERATED.Name` is a class `ir.vector.unit_ops` makes from the unit's
declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import attrs

from ir.vector import enums as E
from ir.vector import ways
from ir.vector.numerics._arrays import f32_bits

__all__ = ["Codec", "TracedRef", "ClassesOf", "VECTOR_OPS", "CHAIN_OPS", "GENERATED", "elementwise", "width_codec",
           "way_codec", "tag_codec", "reinterpret_codec", "op_value", "op_text", "mode_text", "mul_names", "SHAPES"]


# a shape change -> the (time, packet) it leaves (`ir.vector.ways`)
SHAPES = {"trim": ways.trim_shape, "split": ways.split_shape, "pad": ways.pad_shape, "concat": ways.concat_shape}


@attrs.frozen
class TracedRef:
    """Class `name` of the module `load` imports and returns."""

    load: Callable[[], ModuleType]
    name: str

    def resolve(self) -> type:
        return getattr(self.load(), self.name)


class ClassesOf:
    """`ClassesOf(load).Name`: the `TracedRef` of class `Name` of the module `load` imports."""

    def __init__(self, load: Callable[[], ModuleType]) -> None:
        self.load = load

    def __getattr__(self, name: str) -> TracedRef:
        if name.startswith("_"):
            raise AttributeError(name)
        return TracedRef(self.load, name)


def _vector_ops() -> ModuleType:
    from ir.vector import ops
    return ops


def _chain_ops() -> ModuleType:
    from ir.vector import chain_ops
    return chain_ops


def _unit_ops() -> ModuleType:
    from ir.vector import unit_ops
    return unit_ops


VECTOR_OPS, CHAIN_OPS = ClassesOf(_vector_ops), ClassesOf(_chain_ops)
GENERATED = ClassesOf(_unit_ops)  # made from the unit's declaration (ir/vector/unit_ops.py)


@attrs.frozen
class Codec:
    """The map from a unit's traced op to its step: `encode(spec, op)` gives the step tuple
    `(unit, op, arg[, mode, arg1])`. `traced` is the traced op class (resolved when first needed)."""

    traced: TracedRef
    encode: Callable[..., tuple]


def mul_names() -> tuple[str, ...]:
    """The step op names of `FpBinaryOp.MUL_F`, one per ALU that may run it."""
    return tuple(f"MUL_F_{alu.name}" for alu in E.FpMulAlu)


def op_value(spec: Any, name: str) -> Any | None:
    """The op enum value `name` names for the unit (None: the unit has no op enum, or no such op)."""
    cls = spec.op_enum
    if cls is E.FpBinaryOp and name in mul_names():
        return E.FpBinaryOp.MUL_F(getattr(E.FpMulAlu, name[len("MUL_F_"):]))
    value = getattr(cls, name, None) if cls is not None else None
    return value if isinstance(value, E.RustEnum) else None


def op_text(value: Any) -> str:
    """The step's op name of an op enum value: a multiply names its ALU (`MUL_F_MUL0`)."""
    return f"MUL_F_{value.mul_alu.name}" if value.name == "MUL_F" else value.name


def mode_text(mode: Any) -> str:
    """A step's mode name: `DEFAULT` for None and for the default modes (MODE01 / MODE012)."""
    return "DEFAULT" if mode is None or mode.name in ("MODE01", "MODE012") else mode.name


def _with_mode(step: tuple, mode: Any, arg1: int = 0) -> tuple:
    """`(unit, op, arg)`, with `(mode name, arg1)` appended when either is set (a default
    mode is the step without a mode)."""
    name = mode_text(mode)
    return step if name == "DEFAULT" and not arg1 else (*step, name, arg1)


def _encode_elementwise(spec: Any, op: Any) -> tuple:
    name = op_text(op.op)
    if spec.arity == 1:
        return spec.name, name, 0
    if getattr(op, "rf", ()):
        return _with_mode((spec.rf_name, name, 0), op.mode)
    arg = f32_bits(op.const) if spec.scalar_in == "f32" else int(op.const)
    return _with_mode((spec.name, name, arg), op.mode, f32_bits(op.const1) if spec.arity == 3 else 0)


def elementwise(traced: TracedRef) -> Codec:
    """The codec of an element-wise unit: traced `op` -> step op, `const` -> arg (an f32's
    bits on f32), `const1` -> arg1 (a ternary's), `mode` -> mode; `rf` -> the `_RF` form."""
    return Codec(traced, _encode_elementwise)


def width_codec(traced: TracedRef) -> Codec:
    """A conversion: its `int_width` -> arg, op NONE."""
    return Codec(traced, lambda spec, op: (spec.name, "NONE", int(op.int_width)))


def way_codec(traced: TracedRef) -> Codec:
    """A way change: no fields (NONE, 0); the traced op names the (time, packet) it leaves."""
    return Codec(traced, lambda spec, op: (spec.name, "NONE", 0))


def tag_codec() -> Codec:
    return Codec(VECTOR_OPS.VectorTag, lambda spec, op: (spec.name, op.mode.name, 0))


def reinterpret_codec() -> Codec:
    return Codec(CHAIN_OPS.VectorReinterpret, lambda spec, op: (spec.name, f"TO_{op.scalar_to.upper()}", 0))
