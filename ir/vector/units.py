"""The Vector Engine's units, one declaration each: everything the layers read about a unit.

A `UnitSpec` names the unit's VISA name (its register-file form adds `_RF`), the pipeline
stage it runs at (`ir.vector.stages`: the stage's place in `INTRA_ORDER` is the unit's rank,
a cluster stage of `MAX_OPS` makes it repeatable), its op enum (or its fixed op names), the
operand kinds it accepts (a constant, a register-file tensor, the paired / merged / zip
steps of a pair pass, branched slots, the stash), the scalar and the way (8 or 4 cells per
step) it reads and leaves, its shape change, its numerics (`ir.vector.numerics.unit_runs`)
and its codec: the map from the traced op (`ir.vector.ops`, ...) to the record's step
fields `(unit, op, arg, mode, arg1)`, from which the lowering (a traced op's `step()`) is made.

The tables the verifiers, the interpreter, the cpu backend and the DSL read are derived
from `SPECS` (`VeUnit`, `VeOpName`, `PairUnit`, `UNITS`, the stage ways); `register` adds a
unit (and its enum members) at run time, `unregister` removes it again.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from ir.vector import enums as E
from ir.vector.numerics import unit_runs as R
from ir.vector.unit_codecs import (CHAIN_OPS, GENERATED, SHAPES, VECTOR_OPS, Codec, elementwise, mode_text, mul_names,
                                   op_text, op_value, reinterpret_codec, tag_codec, way_codec, width_codec)
from ir.vector.stages import INTRA_ORDER, MAX_OPS, VeStage

__all__ = ["UnitSpec", "Codec", "SPECS", "VeUnit", "VeOpName", "VeMode", "PairUnit", "UNITS", "KINDS", "SHAPES",
           "register", "unregister", "spec_of", "is_rf", "dsl_method", "op_value", "op_text", "mode_text",
           "encode_step", "elementwise", "GENERATED"]

S = VeStage
KINDS = frozenset({"const", "rf", "paired", "merged", "zip", "branch", "stash"})


@attrs.frozen
class UnitSpec:
    """One machine unit of the Vector Engine's intra-slice chain."""

    name: str                    # VISA unit name; the register-file form is `{name}_RF`
    stage: VeStage | None        # the pipeline stage (None: holds its place, the reinterpret)
    ops: Any                     # the op enum class, or a tuple of fixed op names
    scalar_in: str               # "i32", "f32" or "any"
    scalar_out: str = "same"     # "i32", "f32", "same", or "op" (the op names it: TO_I32 / TO_F32)
    way_in: int | None = 8       # cells per step it reads (None: any, it holds the way)
    way_out: int | None = 8      # cells per step it leaves
    shape: str = ""              # its shape change: "", "trim", "split", "pad" or "concat"
    arg: str = "none"            # what a step's arg holds: none, tag, int_width, reduce, i32, f32, unary
    arity: int = 0               # an element-wise op's inputs (1 unary, 2 binary, 3 ternary), else 0
    kinds: frozenset[str] = attrs.field(default=frozenset({"const"}), converter=frozenset)
    fn: Callable[[str], Any] | None = None   # element-wise: op name -> function on the scalar's arrays
    run: Callable[..., Any] | None = None    # whole step: (op, arg, values, mode, arg1) -> values
    codec: Codec | None = None
    shifts: bool = False         # an op named *SHIFT* takes its constant as a shift amount (0 ... 31)
    methods: tuple[str, ...] = ()  # the DSL methods configuring it (a binary / ternary one adds `_with_mode`)

    def __attrs_post_init__(self) -> None:
        numerics = (self.fn is not None) + (self.run is not None)  # a reduce runs in its own step (none)
        if not self.kinds <= KINDS or self.shape not in ("", *SHAPES) or numerics != (self.arg != "reduce"):
            raise ValueError(f"unit {self.name}: kinds {sorted(self.kinds)}, shape {self.shape!r}, "
                             f"and exactly one of fn / run")

    @property
    def rf_name(self) -> str | None:
        return f"{self.name}_RF" if "rf" in self.kinds else None

    @property
    def rank(self) -> int | None:
        """Its stage's place in the chain (None: the reinterpret, which holds its place)."""
        return None if self.stage is None else INTRA_ORDER.index(self.stage)

    @property
    def repeatable(self) -> bool:
        """Whether a second op of the unit may follow in a row (a cluster stage)."""
        return self.stage in MAX_OPS

    @property
    def op_enum(self) -> Any | None:
        return None if isinstance(self.ops, tuple) else self.ops

    @property
    def op_names(self) -> tuple[str, ...]:
        if isinstance(self.ops, tuple):
            return self.ops
        return tuple(n for v in self.ops for n in (mul_names() if v.name == "MUL_F" else (v.name,)))

    @property
    def pair_unit(self) -> bool:
        return bool(self.kinds & {"paired", "merged"})

    @property
    def dsl_methods(self) -> tuple[str, ...]:
        """Its DSL methods, each binary / ternary one with its `_with_mode` form."""
        return tuple(n for m in self.methods for n in ((m, f"{m}_with_mode") if self.arity >= 2 else (m,)))


def dsl_method(name: str) -> tuple[VeStage, frozenset[str], Any]:
    """(stage it enters, the scalars it takes, the way the stream must run at) of a DSL method
    that configures a unit: what its units declare (`vector_clip` is CLIP_I32's and CLIP_F32's)."""
    found = [s for s in SPECS.values() if name in s.dsl_methods]
    if not found or len({s.stage for s in found}) != 1 or len({s.way_in for s in found}) != 1:
        raise KeyError(f"{name} configures no unit, or units of different stages or ways")
    scalars = frozenset(x for s in found for x in (("i32", "f32") if s.scalar_in == "any" else (s.scalar_in,)))
    return found[0].stage, scalars, E.Way.WAY4 if found[0].way_in == 4 else E.Way.WAY8


# --- the registry and the enums derived from it --------------------------------------------------

SPECS: dict[str, UnitSpec] = {}
_BY_NAME: dict[str, tuple[UnitSpec, bool]] = {}  # VISA name -> (spec, the register-file form)
UNITS: dict[str, tuple[str, str]] = {}  # VISA name (RF forms too) -> (input scalar, output scalar)


def spec_of(unit: Any) -> UnitSpec:
    """The spec of a VISA unit name or unit enum member (KeyError for an unknown unit)."""
    return _BY_NAME[getattr(unit, "name", unit)][0]


def is_rf(unit: Any) -> bool:
    """Whether the VISA unit (name or member) is a register-file form (`FXP_RF`)."""
    return _BY_NAME[getattr(unit, "name", unit)][1]


def _names(spec: UnitSpec) -> Iterator[tuple[str, bool]]:
    yield spec.name, False
    if spec.rf_name:
        yield spec.rf_name, True


def _visa_order() -> list[str]:
    """Every VISA unit name: the plain forms in declaration order, then the register-file forms."""
    return [s.name for s in SPECS.values()] + [s.rf_name for s in SPECS.values() if s.rf_name]


def _op_order() -> list[str]:
    names = ["ZERO", "NONE", *(n for s in SPECS.values() if s.op_enum is not None for n in s.op_names),
             *(n for s in SPECS.values() if s.op_enum is None for n in s.op_names)]
    return list(dict.fromkeys(names))


def _add_member(cls: type[enum.Enum], name: str, value: Any) -> None:
    """Add a member to a live enum class (a registered unit's name)."""
    if name in cls.__members__:
        return
    member = object.__new__(cls)
    member._name_, member._value_ = name, value
    member.__objclass__ = cls
    member.__init__(value)
    cls._member_map_[name] = member
    cls._member_names_.append(name)
    cls._value2member_map_[value] = member
    type.__setattr__(cls, name, member)


def _drop_member(cls: type[enum.Enum], name: str) -> None:
    member = cls._member_map_.pop(name, None)
    if member is None:
        return
    cls._member_names_.remove(name)
    cls._value2member_map_.pop(member._value_, None)
    type.__delattr__(cls, name)


def register(spec: UnitSpec) -> UnitSpec:
    """Declare a unit: every derived table (and `VeUnit` / `VeOpName` / `PairUnit`) sees it."""
    if spec.name in SPECS or any(n in _BY_NAME for n, _ in _names(spec)):
        raise ValueError(f"unit {spec.name} is declared twice")
    if any(s.stage == spec.stage and s.way_out != spec.way_out for s in SPECS.values() if spec.stage is not None):
        raise ValueError(f"unit {spec.name}: the units of stage {spec.stage.rust_name} leave one way")
    SPECS[spec.name] = spec
    _ENCODERS.clear()
    same = spec.scalar_out == "same" and spec.scalar_in != "any"
    for name, rf in _names(spec):
        _BY_NAME[name] = (spec, rf)
        UNITS[name] = spec.scalar_in, spec.scalar_in if same else spec.scalar_out
    if "VeUnit" in globals():  # a unit added after the built-in ones
        for name, _ in _names(spec):
            _add_member(VeUnit, name, name.lower())
        for name in spec.op_names:
            _add_member(VeOpName, name, name)
        if spec.pair_unit:
            _add_member(PairUnit, spec.name, spec.name.lower())
    return spec


ON_UNREGISTER: list[Callable[[UnitSpec], None]] = []  # what a layer forgets of a removed unit


def unregister(name: str) -> None:
    """Remove a unit `register` added (its enum members too, unless another unit uses them)."""
    spec = SPECS.pop(name)
    _ENCODERS.clear()
    for forget in ON_UNREGISTER:
        forget(spec)
    for visa, _ in _names(spec):
        del _BY_NAME[visa]
        del UNITS[visa]
        _drop_member(VeUnit, visa)
    _drop_member(PairUnit, spec.name)
    kept = set(_op_order())
    for op in spec.op_names:
        if op not in kept:
            _drop_member(VeOpName, op)


_ENCODERS: dict[tuple[type, str], UnitSpec] = {}  # (traced class, scalar_in) -> its unit; made on first use


def _encoders() -> dict[tuple[type, str], UnitSpec]:
    """Every unit whose codec names a hand-written traced class, under that class (resolved:
    this loads the traced ops' modules) and the scalar it declares it reads; two units
    claiming one pair are a declaration error. A class made from a unit's declaration
    (`GENERATED`, ir/vector/unit_ops.py) holds its unit itself (`UNIT`), and is made on use."""
    if not _ENCODERS:
        for spec in SPECS.values():
            if spec.codec is None or spec.codec.traced.load is GENERATED.load:
                continue
            key = (spec.codec.traced.resolve(), spec.scalar_in)
            other = _ENCODERS.setdefault(key, spec)
            if other is not spec:
                _ENCODERS.clear()
                raise ValueError(f"units {other.name} and {spec.name} both encode {key[0].__qualname__} "
                                 f"on {key[1]}")
    return _ENCODERS


def encode_step(op: Any) -> tuple:
    """The step tuple of a traced op (its `step()`): the codec of the unit that declares the
    op's class (or the nearest base of it) as its traced class, on the op's scalar (clip and
    logic are a unit per scalar over one traced class) or on any scalar."""
    made = getattr(type(op), "UNIT", None)
    if made is not None:
        return made.codec.encode(made, op)
    table = _encoders()
    for cls in type(op).__mro__:
        spec = table.get((cls, op.scalar)) or table.get((cls, "any"))
        if spec is not None:
            return spec.codec.encode(spec, op)
    raise KeyError(f"no unit encodes {type(op).__qualname__} on {op.scalar}")


# --- the built-in units, in pipeline order ---------------------------------------------------------

_NONE, _V, _CH = ("NONE",), VECTOR_OPS, CHAIN_OPS
_BIN = KINDS  # a binary unit takes every operand kind
for _spec in (
    UnitSpec("TAG", S.TAG, ("ZERO",), "any", arg="tag", run=R.run_same, codec=tag_codec(),
             methods=("vector_intra_slice_tag",)),
    UnitSpec("FXP", S.FXP, E.FxpBinaryOp, "i32", arg="i32", arity=2, kinds=_BIN, fn=R.fxp_fn, shifts=True,
             codec=elementwise(_V.VectorFxp), methods=("vector_fxp", "vector_fxp_zip")),
    UnitSpec("FXP_TO_FP", S.FXP_TO_FP, _NONE, "i32", "f32", arg="int_width", kinds={"const", "paired", "merged"},
             run=R.run_fxp_to_fp, codec=width_codec(_V.VectorFxpToFp), methods=("vector_fxp_to_fp",)),
    UnitSpec("NARROW_TRIM", S.NARROW, _NONE, "any", way_out=4, shape="trim", kinds={"const", "paired", "merged"},
             run=R.run_trim, codec=way_codec(_V.VectorNarrowTrim), methods=("vector_narrow_trim",)),
    UnitSpec("FP_UNARY", S.FP, E.FpUnaryOp, "f32", way_in=4, way_out=4, arg="unary", arity=1,
             kinds={"const", "paired", "merged"}, fn=R.fp_unary_fn,
             codec=elementwise(_V.VectorFpUnary), methods=("vector_fp_unary",)),
    UnitSpec("FP_BINARY", S.FP, E.FpBinaryOp, "f32", way_in=4, way_out=4, arg="f32", arity=2, kinds=_BIN,
             fn=R.fp_binary_fn, codec=elementwise(_V.VectorFpBinary), methods=("vector_fp_binary", "vector_fp_zip")),
    UnitSpec("WIDEN_PAD", S.WIDEN, _NONE, "any", way_in=4, shape="pad", kinds={"const", "paired", "merged"},
             run=R.run_same, codec=way_codec(_V.VectorWidenPad), methods=("vector_widen_pad",)),
    UnitSpec("FP_TO_FXP", S.FP_TO_FXP, _NONE, "f32", "i32", arg="int_width", kinds={"const", "paired", "merged"},
             run=R.run_fp_to_fxp, codec=width_codec(_V.VectorFpToFxp), methods=("vector_fp_to_fxp",)),
    UnitSpec("CLIP_I32", S.CLIP, E.ClipBinaryOpI32, "i32", arg="i32", arity=2, kinds=_BIN, fn=R.clip_i32_fn,
             codec=elementwise(_V.VectorClip), methods=("vector_clip", "vector_clip_zip")),
    UnitSpec("CLIP_F32", S.CLIP, E.ClipBinaryOpF32, "f32", arg="f32", arity=2, kinds=_BIN, fn=R.clip_f32_fn,
             codec=elementwise(_V.VectorClip), methods=("vector_clip", "vector_clip_zip")),
    UnitSpec("LOGIC_I32", S.LOGIC, E.LogicBinaryOpI32, "i32", arg="i32", arity=2, kinds=_BIN - {"rf"},
             fn=R.logic_i32_fn, shifts=True,
             codec=elementwise(_CH.VectorLogic), methods=("vector_logic", "vector_logic_zip")),
    UnitSpec("LOGIC_F32", S.LOGIC, E.LogicBinaryOpF32, "f32", arg="f32", arity=2, kinds=_BIN - {"rf"},
             fn=R.logic_f32_fn, codec=elementwise(_CH.VectorLogic), methods=("vector_logic", "vector_logic_zip")),
    UnitSpec("NARROW_SPLIT", S.NARROW, _NONE, "any", way_out=4, shape="split", kinds={"const", "paired", "merged"},
             run=R.run_split, codec=way_codec(_CH.VectorNarrowSplit), methods=("vector_narrow_split",)),
    UnitSpec("FP_TERNARY", S.FP, E.FpTernaryOp, "f32", way_in=4, way_out=4, arg="f32", arity=3,
             kinds=_BIN - {"rf", "zip"}, fn=R.fp_ternary_fn,
             codec=elementwise(_CH.VectorFpTernary), methods=("vector_fp_ternary",)),
    UnitSpec("FP_DIV", S.FP_DIV, E.FpDivBinaryOp, "f32", way_in=4, way_out=4, arg="f32", arity=2,
             kinds={"const", "rf", "merged", "branch", "stash"}, fn=R.fp_div_fn,
             codec=elementwise(_CH.VectorFpDiv), methods=("vector_fp_div",)),
    UnitSpec("WIDEN_CONCAT", S.WIDEN, _NONE, "any", way_in=4, shape="concat", kinds={"const", "paired", "merged"},
             run=R.run_concat, codec=way_codec(_CH.VectorWidenConcat), methods=("vector_widen_concat",)),
    UnitSpec("REINTERPRET", None, ("TO_I32", "TO_F32"), "any", "op", way_in=None, way_out=None,
             kinds={"const", "paired", "merged"}, run=R.run_reinterpret,
             codec=reinterpret_codec(), methods=("vector_reinterpret",)),
    UnitSpec("INTRA_REDUCE_I32", S.INTRA_SLICE_REDUCE, E.IntraSliceReduceOpI32, "i32", way_in=4, way_out=4,
             arg="reduce", kinds={"const", "merged"},
             methods=("vector_intra_slice_reduce",)),
    UnitSpec("INTRA_REDUCE_F32", S.INTRA_SLICE_REDUCE, E.IntraSliceReduceOpF32, "f32", way_in=4, way_out=4,
             arg="reduce", kinds={"const", "merged"},
             methods=("vector_intra_slice_reduce",)),
):
    register(_spec)

VeUnit = enum.Enum("VeUnit", {name: name.lower() for name in _visa_order()})
VeUnit.__doc__ = "The unit (stage and scalar) a step runs on: every declared unit and its register-file form."
VeOpName = enum.Enum("VeOpName", {name: name for name in _op_order()})
VeOpName.__doc__ = "A step's op: a variant name of its unit's op enum, `ZERO` (tag) or `NONE` (conversion)."
VeMode = enum.Enum("VeMode", {name: name for name in (
    "DEFAULT", *(v.name for v in E.BinaryArgMode), *(v.name for v in E.TernaryArgMode))})
VeMode.__doc__ = "A step's argument mode: DEFAULT (MODE01 / MODE012) or a BinaryArgMode / TernaryArgMode name."
PairUnit = enum.Enum("PairUnit", {s.name: s.name.lower() for s in SPECS.values() if s.pair_unit})
PairUnit.__doc__ = "The unit of a pair step: every unit with a paired or merged form."
