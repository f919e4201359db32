"""A register-file tensor relabelled: `v.reshape(VrfTensor[...])` / `t.reshape(TrfTensor[...])`.

The reference's `unsafe { v.reshape() }` (furiosa-opt-std v0.9): the tensor's cells stay
where they are, in the same slices and the same register words, and the target type names
them anew: cell i of a level is cell i of the same level of the target. So the target is a
tensor of the same kind and element type (TYPE-6) whose every level keeps its number of
cells (VIEW-5), and, since a relabel reads no other slice's data, whose Chip, Cluster and
Slice hold data at the same positions (RFRESHAPE-1): naming the copies of a broadcast is a
relabel, naming the slices padding leaves empty is not (the rules: `ir.rf_relabel`). Whether the words mean what the new
names say (a regrouping in order, as the reference asks) stays the kernel's to know.
"""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.op_frame import attr, rule
from ir.ops import InputOp
from ir.rf_relabel import relabel_problem
from ir.types import Type

__all__ = ["RfReshape"]


@attrs.frozen(kw_only=True)
class RfReshape(InputOp):
    """`%5 = rf_reshape %4 to=vrf<...>`: the register-file tensor `input` under the type `to`."""

    STAGE = "rf_reshape"
    to: Type = attr()

    def infer_type(self) -> Type:
        return self.to

    def _found(self, code: str) -> Violation | None:
        v = relabel_problem(self.input.type, self.to)
        return v if v is not None and v.code == code else None

    @rule("TYPE-6")
    def _kind(self) -> Violation | None:
        return self._found("TYPE-6")

    @rule("VIEW-5")
    def _sizes(self) -> Violation | None:
        return self._found("VIEW-5")

    @rule("RFRESHAPE-1")
    def _slices(self) -> Violation | None:
        return self._found("RFRESHAPE-1")
