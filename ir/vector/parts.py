"""Method parts shared by the Vector Engine op classes of pair mode, branched operands and
the stash (`ir.vector.pair_ops`, `ir.vector.pair_logic_ops`, `ir.vector.branch_ops`,
`ir.vector.stash_ops`): the `UnitStep` base, and methods to assign
in a class body (`unit = clip_unit`), so each op states its cluster once (its VE-DTYPE-1 rule,
`clip_family` / `logic_family`, is `ir.vector.ops`')."""

from __future__ import annotations

from typing import Any, ClassVar

from ir.vector.units import op_text

__all__ = ["UnitStep", "clip_unit", "logic_unit"]


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


def logic_unit(self: Any) -> str:
    """The Logic cluster's unit by the stream's scalar."""
    return "LOGIC_F32" if self.scalar == "f32" else "LOGIC_I32"

