"""The operand kinds of Vector Engine ops: a constant, a VRF tensor, the stash, and the
pair a ternary op takes. (Guarded slot layouts are `ir.vector.branch.BranchedOperand`.)

Each binary op reads one operand besides the stream; which of the two feeds which
argument is the op's argument mode. A constant is checked where it is written (VE-CONST-*).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.vector.errors import refuse
from ir.vector.scalars import f32_constant, scalar_constant

__all__ = ["Constant", "VrfOperand", "StashOperand", "Stash", "TernaryOperand", "SCALARS", "rf_port"]

SCALARS = ("i32", "f32")


def _scalar(instance: Any, attribute: Any, value: str) -> None:
    if value not in SCALARS:
        raise ValueError(f"the Vector Engine holds i32 and f32, not {value!r}")


@attrs.frozen
class Constant:
    """An immediate operand: one i32 or f32 value applied to every element. Build it with
    `Constant.of`, which checks the value (VE-CONST-1/2/3)."""

    value: Any
    scalar: str = attrs.field(validator=_scalar)

    @classmethod
    def of(cls, value: Any, scalar: str, *, method: str | None = None) -> Constant:
        """The constant `value` for a stream of `scalar`, checked at the user's call."""
        return cls(scalar_constant(value, scalar, method=method), scalar)

    def __str__(self) -> str:
        return repr(self.value.item() if isinstance(self.value, np.generic) else self.value)


@attrs.frozen
class VrfOperand:
    """A read-many operand held in the vector register file: `tensor` is the traced
    `VrfTensor` value, whose element mapping says how it repeats over the stream."""

    tensor: Any
    scalar: str = attrs.field(validator=_scalar)


def rf_port() -> VrfOperand:
    """The source a branched layout's register-file slot holds: a placeholder, as the op's
    `rf` operand names the VRF tensor (and so its scalar)."""
    return VrfOperand(None, "i32")


@attrs.frozen
class StashOperand:
    """The stash read: the value `vector_stash` wrote earlier in the same pass, read by at
    most one op, at the scalar and way it was written with."""

    def __str__(self) -> str:
        return "Stash"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """`Stash()`: the reference's unit struct `Stash` is a value, as `TagMode.ZERO` is."""
        raise refuse("VE-ENUM-5", "`Stash` is already the stash operand, so it cannot be called",
                     help="write `Stash` without parentheses")


Stash = StashOperand()


@attrs.frozen
class TernaryOperand:
    """The operands of `FpTernaryOp.FMA_F`: `rhs` (a constant, VRF or stash operand) and the
    f32 constant `operand1`; with the default mode the op is stream * rhs + operand1."""

    rhs: Constant | VrfOperand | StashOperand
    operand1: Constant

    @classmethod
    def of(cls, rhs: Any, operand1: Any, *, method: str | None = None) -> TernaryOperand:
        """Build from a kernel's `(rhs, c)`: a float rhs becomes an f32 Constant."""
        if not isinstance(rhs, (Constant, VrfOperand, StashOperand)):
            rhs = Constant(f32_constant(rhs, method=method), "f32")
        return cls(rhs, Constant(f32_constant(operand1, method=method), "f32"))
