"""Method parts shared by the Vector Engine op classes of pair mode, branched operands and
the stash (`ir.vector.pair_ops`, `ir.vector.pair_logic_ops`, `ir.vector.branch_ops`,
`ir.vector.stash_ops`): assign them
in a class body (`unit = clip_unit`), so each op states its cluster once."""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.op_frame import rule
from ir.vector import enums as E
from ir.vector.ops import _dtype_fault, fp_op_name

__all__ = ["clip_unit", "clip_family", "logic_unit", "logic_family", "op_name"]


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


def op_name(self: Any) -> str:
    """The step name of the op (a multiply names its ALU, `MUL_F_MUL0`)."""
    return fp_op_name(self.op) if self.unit() == "FP_BINARY" else self.op.name
