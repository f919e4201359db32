"""The bit-pattern ops of pair mode, beside the other pair ops of `ir.vector.pair_ops`: the
Logic cluster's `vector_logic` on each group and `vector_logic_zip` merge (each with a
`*_with_mode` form), and `vector_reinterpret` of both groups.

A paired logic op runs `op(group, constant)` on the groups that have a constant (i32: the
bitwise ops and the shifts; f32: the bitwise ops on the bit patterns); its mode is read inside
each group (0 that group's stream, 1 its constant). The zip runs `op` on the two groups the
mode picks (MODE01 `op(group0, group1)`). The Logic stage is the first after the tag, so a
logic op comes before every other paired op. Rules VE-DTYPE-1 (the op enum of the stream's
scalar), VE-CONST-1 / VE-CONST-2 (the constants), VE-SHIFT-1 (a constant shift amount).
`vector_reinterpret(d2)` rereads both groups' 32-bit patterns as `d2`; like the single-stream
op it takes no ALU and holds the stage and the way.
"""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.op_frame import rule
from ir.vector import scalars
from ir.vector.chain_ops import LOGIC_SHIFTS
from ir.vector.ops import amount_is_const, logic_family
from ir.dtypes import DType
from ir.op_frame import attr
from ir.types import Type
from ir.vector.pair_ops import PairOp, _const_fault, _PairBinary, _Zip
from ir.vector.parts import logic_unit

__all__ = ["PairLogic", "ZipLogic", "PairReinterpret", "PAIR_LOGIC_CLASSES"]


@attrs.frozen(kw_only=True)
class PairLogic(_PairBinary):
    """Logic cluster on each group with its own constant (None: that group is left as it is)."""

    STAGE = "vector_logic"

    unit = logic_unit
    _family = logic_family

    @rule("VE-CONST-1")
    def _range(self) -> Violation | None:
        return _const_fault(self, scalars.i32_constant if self.scalar == "i32" else scalars.f32_constant)

    @rule("VE-SHIFT-1")
    def _shift(self) -> Violation | None:
        if self.scalar == "i32" and self.op.name in LOGIC_SHIFTS and amount_is_const(self.mode):
            return _const_fault(self, scalars.shift_amount)
        return None


@attrs.frozen(kw_only=True)
class ZipLogic(_Zip):
    """`op(group0, group1)` on the Logic cluster (i32 or f32 bit patterns)."""

    STAGE = "vector_logic_zip"

    unit = logic_unit
    _family = logic_family


@attrs.frozen(kw_only=True)
class PairReinterpret(PairOp):
    """Both groups' 32-bit patterns reread as `scalar_to` ("i32" or "f32")."""

    STAGE = "vector_reinterpret"
    scalar_to: str = attr()

    def infer_type(self) -> Type:
        return attrs.evolve(self.input.type, dtype=DType.I32 if self.scalar_to == "i32" else DType.F32)

    def pair_step(self) -> tuple[str, str, str, int, int]:
        return "REINTERPRET", f"TO_{self.scalar_to.upper()}", "BOTH", 0, 0


PAIR_LOGIC_CLASSES: tuple[type, ...] = (PairLogic, ZipLogic, PairReinterpret)
