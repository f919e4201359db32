"""A toy stage declared once (ir.stage_spec): `reverse_packet(group)` after `collect`
reverses each run of `group` cells of every packet. For tests/engines/test_declared_stage.py
and the walk of docs/reference/adding-an-op.md ("A new stage").

This module is the whole stage: the traced op with its rule, the data movement and the
declaration. `declare()` makes and enters them; the test calls it inside a registry of its
own (ir.declare.Registry), so nothing global learns of the toy.
"""

from __future__ import annotations

import attrs
import numpy as np

from ir import ops
from ir.data_movement_ops import Transpose
from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.op_frame import attr, operand
from ir.ops import Op, Value
from ir.stage_spec import StageSpec, declare_stage
from ir.types import Type

__all__ = ["declare", "spec", "reverse_groups"]


def group_rule(op: Op) -> Violation | None:
    """`group` is a positive divisor of the packet (a real stage gives its rules codes of
    their own in ir/codes.py, each with a page in npu_opt/pages/)."""
    cells = op.input.type.packet.size
    if not isinstance(op.group, int) or op.group < 1 or cells % op.group:
        return Violation("TYPE-6", f"`group` of `reverse_packet` must divide the packet's {cells} cells, "
                                   f"not {op.group!r}")
    return None


def reverse_groups(op: object, x: np.ndarray) -> np.ndarray:
    """x[row, time, packet] with each run of `op.group` cells of a packet reversed."""
    rows, steps, cells = x.shape
    return np.ascontiguousarray(x.reshape(rows, steps, cells // op.group, op.group)[..., ::-1].reshape(x.shape))


def declare() -> StageSpec:
    """THE declaration: the traced op and what every other layer derives from."""
    return declare_stage(spec())


def spec(after: tuple[type, ...] = (ops.Collect,), then: type = Transpose) -> StageSpec:
    """The toy's StageSpec, offered after `after`, its result offering what `then`'s does
    (undeclared: `declare` enters it)."""

    @attrs.frozen(kw_only=True)
    class ReversePacket(Op):
        """Reverse each run of `group` cells of every packet."""

        STAGE = "reverse_packet"
        RULES = (group_rule,)
        input: Value = operand()
        group: int = attr()

        def infer_type(self) -> Type:
            return self.input.type

    return StageSpec(
        ReversePacket, after=after, then=then, run=reverse_groups, rank=91, engine="transpose",
        feed_elements=frozenset({DType.I32, DType.F32, DType.BF16, DType.I8}),
        doc="A toy stage: reverse each run of `group` cells of every packet.")
