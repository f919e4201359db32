"""Traced ops of the data-movement engines: the Transpose Engine and the Switch Engine.

Each op is one declaration on the shared op frame (`ir.op_frame`): its fields, its rules
(the functions of `ir.switch`, which judge the request from the input stream's mappings)
and `RETYPED`: the result is the input stream with the requested mappings. The data
movement itself is `ir.switch.semantics`, which the backends call. A `Switch` lowers into
the `switch=` field of its program's feed (`tu_ops.switch`), a `Transpose` into a record of
its own.
"""

from __future__ import annotations

import attrs

from ir.diagnostic import Violation
from ir.mapping.nodes import Mapping
from ir.op_frame import attr
from ir.ops import InputOp
from ir.switch.config import SwitchVariant
from ir.switch.rules import check_switch
from ir.transpose.rules import TransposeParams, check_transpose

__all__ = ["Transpose", "transpose_rules", "Switch", "switch_rules"]


def transpose_rules(op: Transpose) -> Violation | None:
    """TRANSPOSE-1..5 and 12..16: the engine can produce `(out_time; out_packet)` from the input."""
    t = op.input.type
    found = check_transpose(t.time, t.packet, op.out_time, op.out_packet, t.dtype)
    return found if isinstance(found, Violation) else None


@attrs.frozen(kw_only=True)
class Transpose(InputOp):
    """Transpose Engine: swap packet elements and time steps of each slice's stream."""

    STAGE = "transpose"
    RULES = (transpose_rules,)
    RETYPED = ("out_time", "out_packet")
    out_time: Mapping = attr()
    out_packet: Mapping = attr()

    def params(self) -> TransposeParams:
        """The engine parameters of this (legal) transpose."""
        t = self.input.type
        found = check_transpose(t.time, t.packet, self.out_time, self.out_packet, t.dtype)
        if isinstance(found, Violation):
            raise ValueError(f"{self.text()}: {found.message}")
        return found


def switch_rules(op: Switch) -> Violation | None:
    """SWITCH-2..19: the ring can route `(Slice, Time)` to `(out_slice, out_time)` under `config`
    (SWITCH-1, a malformed config value, is refused before the op is built)."""
    t = op.input.type
    return check_switch(t.slice, t.time, op.out_slice, op.out_time, op.config, t.packet, t.dtype)


@attrs.frozen(kw_only=True)
class Switch(InputOp):
    """Switch Engine: move each slice's stream to other slices of the ring (`config`)."""

    STAGE = "switch"
    FEED = True
    RULES = (switch_rules,)
    RETYPED = ("out_slice", "out_time")
    out_slice: Mapping = attr()
    out_time: Mapping = attr()
    config: SwitchVariant = attr()

