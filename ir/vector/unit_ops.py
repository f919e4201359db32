"""Traced ops made from unit declarations: an element-wise unit whose codec names a class of
this module (`elementwise(GENERATED.VectorAbsDiff)`) needs no hand-written op.

The class is made on first use from the unit's `UnitSpec` (`ir.vector.units`): its `STAGE`
is the unit's first DSL method, its `UNIT` the declaration it was made from, its fields `op` (a value of the unit's op enum), `const`
(binary units) and `mode` (an argument mode, None the default), its `step()` the unit's
codec, its rules the constant checks of the unit's scalar (VE-CONST-1 / -2 / -3, and
VE-SHIFT-1 for a unit whose shift ops take an amount). The DSL (`npu_opt.vector_unit_methods`),
the cpu backend and the lowering find these classes through `unit_op_classes()`.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.op_frame import attr
from ir.ops import _DECLARED
from ir.vector.units import GENERATED, ON_UNREGISTER, SPECS, UnitSpec
from ir.vector.ops import UnitOp, _f32_kind, _i32_kind, _i32_range, _shift

__all__ = ["unit_op_classes", "generated_spec"]

_MADE: dict[str, tuple[UnitSpec, type]] = {}  # class name -> (the spec it was made from, the class)


def generated_spec(spec: UnitSpec) -> bool:
    """Whether the unit's traced op is made here (its codec names a class of this module)."""
    return spec.codec is not None and spec.codec.traced.load is GENERATED.load


def _make(spec: UnitSpec, name: str) -> type:
    if spec.arity not in (1, 2) or spec.scalar_in not in ("i32", "f32") or not spec.methods:
        raise TypeError(f"unit {spec.name}: a generated op is a unary or binary i32 / f32 op with a DSL method")
    fields: dict[str, Any] = {"op": attr()}
    if spec.arity == 2:
        fields.update(const=attr(), mode=attr(default=None))
    body: dict[str, Any] = {"STAGE": spec.methods[0], "UNIT": spec, "__doc__": f"The {spec.name} unit (generated from its UnitSpec).",
                            "__annotations__": {k: Any for k in fields}, **fields}
    if spec.arity == 2 and spec.scalar_in == "i32":
        body.update(_i32_kind=_i32_kind, _i32_range=_i32_range, **({"_shift": _shift} if spec.shifts else {}))
    elif spec.arity == 2:
        body["_f32_kind"] = _f32_kind
    cls = attrs.frozen(kw_only=True)(type(name, (UnitOp,), body))
    cls.__module__ = __name__
    return cls


def __getattr__(name: str) -> type:
    """The class `name` a unit's codec names, made from that unit's current declaration."""
    spec = next((s for s in SPECS.values() if generated_spec(s) and s.codec.traced.name == name), None)
    if spec is None:
        raise AttributeError(name)
    made = _MADE.get(name)
    if made is None or made[0] is not spec:
        made = _MADE[name] = (spec, _make(spec, name))
    return made[1]


def _forget(spec: UnitSpec) -> None:
    """A removed unit's class leaves the traced op table (`ir.ops._DECLARED`)."""
    for name, (made, cls) in list(_MADE.items()):
        if made is spec:
            del _MADE[name]
            if _DECLARED.get(cls.STAGE) is cls:
                del _DECLARED[cls.STAGE]


ON_UNREGISTER.append(_forget)


def unit_op_classes() -> list[type]:
    """The generated traced op of every declared unit that has one."""
    return [__getattr__(s.codec.traced.name) for s in SPECS.values() if generated_spec(s)]
