"""The DSL methods of the units whose traced op is made from their declaration
(`ir.vector.unit_ops`): `name(op)` for a unary unit, `name(op, operand)` and
`name_with_mode(op, mode, operand)` for a binary one, each `name` a DSL method the unit's
`UnitSpec` lists. The method checks the op against the unit's op enum (VE-ENUM-*), the mode
against `BinaryArgMode`, takes a constant operand (`resolve_operand`), claims the op's ALU and
enters the unit's stage; `npu_opt.vector_stages` offers it where the stage may follow.
"""

from __future__ import annotations

from typing import Any

from ir.location import Location
from ir.vector.units import SPECS, UnitSpec
from ir.vector.unit_ops import generated_spec, unit_op_classes
from npu_opt import vector_pass as vs
from npu_opt.stagebase import Poisoned, stage_method
from npu_opt.vector_chain_methods import op_and_mode, resolve_operand

__all__ = ["unit_bodies", "UNIT_BODIES"]


def _emit(stage: Any, loc: Location, spec: UnitSpec, cls: type, name: str, op: Any, mode: Any = None,
          operand: Any = None) -> Any:
    got = op_and_mode(stage, loc, name, spec.op_enum, op, mode)
    if isinstance(got, Poisoned) or spec.arity == 1:
        return got if isinstance(got, Poisoned) else vs._step(stage, loc, cls, spec.stage, got[0].alu, op=got[0])
    op, mode = got
    const = resolve_operand(stage, loc, name, operand)
    if isinstance(const, Poisoned):
        return const
    return vs._step(stage, loc, cls, spec.stage, op.alu, op=op, const=const, mode=mode)


def _methods(spec: UnitSpec, cls: type, name: str) -> dict[str, Any]:
    def unary(self: Any, loc: Location, op: Any) -> Any:
        return _emit(self, loc, spec, cls, name, op)

    def plain(self: Any, loc: Location, op: Any, operand: Any) -> Any:
        return _emit(self, loc, spec, cls, name, op, operand=operand)

    def with_mode(self: Any, loc: Location, op: Any, mode: Any, operand: Any) -> Any:
        return _emit(self, loc, spec, cls, f"{name}_with_mode", op, mode, operand)

    what = f"The {spec.name} unit: `op(stream{', operand' if spec.arity == 2 else ''})` on {spec.scalar_in}"
    if spec.arity == 1:
        unary.__doc__, unary.__name__ = f"{what}.", name
        return {name: stage_method(name)(unary)}
    plain.__doc__, plain.__name__ = f"{what}, the operand a constant.", name
    with_mode.__doc__, with_mode.__name__ = f"`{name}` with the arguments `mode` picks.", f"{name}_with_mode"
    return {name: stage_method(name)(plain), f"{name}_with_mode": stage_method(f"{name}_with_mode")(with_mode)}


def unit_bodies() -> dict[str, Any]:
    """method name -> body, for every DSL method of a unit with a generated traced op."""
    classes = {c.__name__: c for c in unit_op_classes()}
    out: dict[str, Any] = {}
    for spec in SPECS.values():
        if generated_spec(spec):
            cls = classes[spec.codec.traced.name]
            for name in spec.methods:
                out.update(_methods(spec, cls, name))
    return out


# the declared units' methods, made once: the stage classes (npu_opt.vector_stage_classes) hold these
UNIT_BODIES: dict[str, Any] = unit_bodies()
