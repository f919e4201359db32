"""Method parts shared by the Vector Engine op classes of pair mode, branched operands and
the stash (`ir.vector.pair_ops`, `ir.vector.pair_logic_ops`, `ir.vector.branch_ops`,
`ir.vector.stash_ops`): the `UnitStep` base, and methods to assign
in a class body (`unit = clip_unit`), so each op states its cluster once."""

from __future__ import annotations

from typing import Any, ClassVar

from ir.diagnostic import Violation
from ir.op_frame import rule
from ir.vector import enums as E
from ir.vector.ops import _dtype_fault
from ir.vector.units import op_text

__all__ = ["UnitStep", "clip_unit", "clip_family", "logic_unit", "logic_family"]


class UnitStep:
    """The unit and op name of the step an op configures: its `UNIT`, unless the class assigns
    `unit` by the stream's scalar (`unit = clip_unit`)."""

    UNIT: ClassVar[str] = ""

    def unit(self) -> str:
        return self.UNIT

    def op_name(self) -> str:
        """The step name of the op (a multiply names its ALU, `MUL_F_MUL0`)."""
        return op_text(self.op)  # type: ignore[attr-defined]


def clip_unit(self: Any) -> str:
    """The Clip cluster's unit by the stream's scalar."""
    return "CLIP_F32" if self.scalar == "f32" else "CLIP_I32"


@rule("VE-DTYPE-1")
def clip_family(self: Any) -> Violation | None:
    """VE-DTYPE-1: a clip op of the other scalar's enum."""
    return _dtype_fault(self, {"i32": E.ClipBinaryOpI32, "f32": E.ClipBinaryOpF32}, f"`{self.STAGE}`")


def logic_unit(self: Any) -> str:
    """The Logic cluster's unit by the stream's scalar."""
    return "LOGIC_F32" if self.scalar == "f32" else "LOGIC_I32"


@rule("VE-DTYPE-1")
def logic_family(self: Any) -> Violation | None:
    """VE-DTYPE-1: a logic op of the other scalar's enum."""
    return _dtype_fault(self, {"i32": E.LogicBinaryOpI32, "f32": E.LogicBinaryOpF32}, "`vector_logic`")

