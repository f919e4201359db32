"""The codecs of the Vector Engine's units (`ir.vector.units`): each a two-way map between a
unit's traced op and the record's step fields `(unit, op, arg, mode, arg1)`.

`encode(spec, op)` gives a traced op's step tuple (its `step()`, which the lowering puts in
the record); `decode(spec, step, src, ident, widened)` the traced op a step stands for (the
VISA re-derivation's inverse of the lowering). `elementwise` is the codec of every
element-wise unit: a traced `op` / `const` / `const1` / `mode` (and an `rf` operand for the
`_RF` form) map to the step's op / arg / arg1 / mode.

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
import numpy as np

from ir.dtypes import DType
from ir.vector import enums as E
from ir.vector import ways

__all__ = ["Codec", "TracedRef", "ClassesOf", "VECTOR_OPS", "CHAIN_OPS", "PAIR_OPS", "PAIR_LOGIC_OPS",
           "PAIR_TERNARY_OPS", "BRANCH_OPS", "GENERATED", "elementwise", "width_codec", "way_codec", "tag_codec", "reinterpret_codec", "mode_value",
           "op_value", "op_text", "mul_names", "SHAPES"]


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


def _pair_ops() -> ModuleType:
    from ir.vector import pair_ops
    return pair_ops


def _pair_logic_ops() -> ModuleType:
    from ir.vector import pair_logic_ops
    return pair_logic_ops


def _pair_ternary_ops() -> ModuleType:
    from ir.vector import pair_ternary_ops
    return pair_ternary_ops


def _branch_ops() -> ModuleType:
    from ir.vector import branch_ops
    return branch_ops


def _unit_ops() -> ModuleType:
    from ir.vector import unit_ops
    return unit_ops


VECTOR_OPS, CHAIN_OPS = ClassesOf(_vector_ops), ClassesOf(_chain_ops)
PAIR_OPS, PAIR_LOGIC_OPS, PAIR_TERNARY_OPS = ClassesOf(_pair_ops), ClassesOf(_pair_logic_ops), ClassesOf(_pair_ternary_ops)
BRANCH_OPS = ClassesOf(_branch_ops)
GENERATED = ClassesOf(_unit_ops)  # made from the unit's declaration (ir/vector/unit_ops.py)


@attrs.frozen
class Codec:
    """The two-way map between a unit's traced op and its step: `encode(spec, op)` gives the
    step tuple `(unit, op, arg[, mode, arg1])`, `decode(spec, step, src, ident, widened)`
    the traced op a step stands for (`widened`: the packet a pad restores). `traced` is the
    traced op class (resolved when first needed)."""

    traced: TracedRef
    encode: Callable[..., tuple]
    decode: Callable[..., Any]
    paired: TracedRef | None = None   # the pair pass's traced op on each group (its `pair_step` encodes it)
    zipped: TracedRef | None = None   # the pair pass's traced op merging the groups
    branched: TracedRef | None = None  # the tagged pass's traced op with a branched operand (`ir.vector.branch_ops`)

    def traced_class(self, which: str = "traced") -> type:
        ref = getattr(self, which)
        if ref is None:
            raise KeyError(f"the unit has no {which} traced op")
        return ref.resolve()


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


def _with_mode(step: tuple, mode: Any, arg1: int = 0) -> tuple:
    """`(unit, op, arg)`, with `(mode name, arg1)` appended when either is set (a default
    mode, MODE01 / MODE012, is the step without a mode)."""
    name = None if mode is None or mode.name in ("MODE01", "MODE012") else mode.name
    return step if name is None and not arg1 else (*step, name or "DEFAULT", arg1)


def _bits(value: Any) -> int:
    return int(np.array(value, np.float32).view(np.uint32))


def _f32(bits: int) -> Any:
    """The f32 of a bit pattern, kept as np.float32 so a NaN keeps its payload."""
    return np.array(bits, np.uint32).view(np.float32)[()]


def mode_value(name: str) -> Any:
    """The argument mode enum value of a step's mode name (None for DEFAULT)."""
    if name == "DEFAULT":
        return None
    return getattr(E.BinaryArgMode, name, None) or getattr(E.TernaryArgMode, name)


def _encode_elementwise(spec: Any, op: Any) -> tuple:
    name = op_text(op.op)
    if spec.arity == 1:
        return spec.name, name, 0
    if getattr(op, "rf", ()):
        return _with_mode((spec.rf_name, name, 0), op.mode)
    arg = _bits(op.const) if spec.scalar_in == "f32" else int(op.const)
    return _with_mode((spec.name, name, arg), op.mode, _bits(op.const1) if spec.arity == 3 else 0)


def _decode_elementwise(spec: Any, step: Any, src: Any, ident: int, widened: Any) -> Any:
    from ir.ops import Value

    kw: dict[str, Any] = {"input": src, "op": op_value(spec, step.op.name), "result": Value(ident, src.type)}
    if spec.arity >= 2:
        kw["const"] = _f32(step.arg) if spec.scalar_in == "f32" else step.arg
        kw["mode"] = mode_value(step.mode.name)
    if spec.arity == 3:
        kw["const1"] = _f32(step.arg1)
    return spec.codec.traced_class()(**kw)


def elementwise(traced: TracedRef, paired: TracedRef | None = None, zipped: TracedRef | None = None,
                branched: TracedRef | None = None) -> Codec:
    """The codec of an element-wise unit: traced `op` <-> step op, `const` <-> arg (an f32's
    bits on f32), `const1` <-> arg1 (a ternary's), `mode` <-> mode; `rf` <-> the `_RF` form.
    `paired` / `zipped` name its pair-pass ops, whose `c0` / `c1` are the step's arg0 / arg1;
    `branched` its op with guarded slots."""
    return Codec(traced, _encode_elementwise, _decode_elementwise, paired, zipped, branched)


def _out_type(spec: Any, src: Any, op_name: str) -> Any:
    scalar = {"op": op_name[len("TO_"):].lower(), "same": None}.get(spec.scalar_out, spec.scalar_out)
    if scalar is None:
        return src.type
    return attrs.evolve(src.type, dtype=DType.I32 if scalar == "i32" else DType.F32)


def width_codec(traced: TracedRef, paired: TracedRef | None = None) -> Codec:
    """A conversion: its `int_width` <-> arg, op NONE."""
    def encode(spec: Any, op: Any) -> tuple:
        return spec.name, "NONE", int(op.int_width)

    def decode(spec: Any, step: Any, src: Any, ident: int, widened: Any) -> Any:
        from ir.ops import Value

        return spec.codec.traced_class()(input=src, int_width=step.arg,
                                         result=Value(ident, _out_type(spec, src, step.op.name)))
    return Codec(traced, encode, decode, paired)


def way_codec(traced: TracedRef, paired: TracedRef | None = None) -> Codec:
    """A way change: no fields (NONE, 0); the traced op names the (time, packet) it leaves."""
    def encode(spec: Any, op: Any) -> tuple:
        return spec.name, "NONE", 0

    def decode(spec: Any, step: Any, src: Any, ident: int, widened: Any) -> Any:
        from ir.ops import Value

        cls, t = spec.codec.traced_class(), src.type
        if spec.shape in ("trim", "pad"):  # the pad restores the pass's packet
            packet = SHAPES["trim"](t.time, t.packet)[1] if spec.shape == "trim" else widened
            return cls(input=src, packet=packet, result=Value(ident, attrs.evolve(t, packet=packet)))
        time, packet = SHAPES[spec.shape](t.time, t.packet)
        return cls(input=src, time=time, packet=packet, result=Value(ident, attrs.evolve(t, time=time, packet=packet)))
    return Codec(traced, encode, decode, paired)


def tag_codec() -> Codec:
    def decode(spec: Any, step: Any, src: Any, ident: int, widened: Any) -> Any:
        from ir.ops import Value

        mode = getattr(E.TagMode, step.op.name)
        return spec.codec.traced_class()(input=src, mode=mode, result=Value(ident, src.type))
    return Codec(VECTOR_OPS.VectorTag, lambda spec, op: (spec.name, op.mode.name, 0), decode)


def reinterpret_codec(paired: TracedRef | None = None) -> Codec:
    def decode(spec: Any, step: Any, src: Any, ident: int, widened: Any) -> Any:
        from ir.ops import Value

        return spec.codec.traced_class()(input=src, scalar_to=step.op.name[len("TO_"):].lower(),
                                         result=Value(ident, _out_type(spec, src, step.op.name)))
    return Codec(CHAIN_OPS.VectorReinterpret,
                 lambda spec, op: (spec.name, f"TO_{op.scalar_to.upper()}", 0), decode, paired)
