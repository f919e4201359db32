"""Traced ops of the stash: `vector_stash()` snapshots the stream, and one later op reads the
snapshot as its operand: a binary op's (`vector_clip(op, Stash)`: `op(stream, stashed)`), or
the first operand of `FMA_F` (`vector_fp_ternary(op, (Stash, c))`: `stream * stashed + c`).
Every cluster with an operand reads it (Logic, Fxp, Float, FpDiv, Clip), each `_with_mode`
form too: the mode reads the stash where it reads the operand.

The stash is write-once and read-once per pass, and read at the scalar and way it was
written with (the DSL checks the order: VE-STASH-1 a read before the write, VE-STASH-2 a
second read, VE-STASH-3 a second write, VE-STASH-5 pair mode; the op checks VE-STASH-4).
A pass with a stash lowers to one `vector_branch` record.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.op_frame import attr, operand, rule
from ir.ops import Value
from ir.vector import scalars
from ir.vector.numerics._arrays import f32_bits
from ir.vector.ops import VectorOp, _checked, clip_family, logic_family
from ir.vector.parts import UnitStep, clip_unit, logic_unit
from ir.vector.units import mode_text

__all__ = ["VectorStash", "StashLogic", "StashFxp", "StashClip", "StashFpBinary", "StashFpTernary", "StashFpDiv",
           "STASH_OP_CLASSES", "STASH_READS", "STASH_READ_OF", "stash_shape_fault"]


@attrs.frozen(kw_only=True)
class VectorStash(VectorOp):
    """Snapshot the stream into the stash (the stream goes on unchanged)."""

    STAGE = "vector_stash"


def stash_shape_fault(op: Any, stashed: Value) -> Violation | None:
    """VE-STASH-4: `op` reads the stash at another scalar or way than it was written with."""
    s, t = stashed.type, op.input.type
    if s.dtype == t.dtype and s.packet.size == t.packet.size:
        return None
    return Violation("VE-STASH-4", f"`{op.STAGE}` reads the stash at {t.packet.size} x {t.dtype}; it was written "
                     f"at {s.packet.size} x {s.dtype}", label="the stash is read at the scalar and way of its write",
                     help="stash where the stream has the reader's scalar and way (e.g. after the widen, at Clip)")


@attrs.frozen(kw_only=True)
class _StashRead(UnitStep, VectorOp):
    TEXT_PREFIX = "stashed_"  # its stages are the plain ops'; IR text tells them apart

    stashed: Value = operand()
    op: Any = attr()
    mode: Any = attr(default=None, optional=True)  # the `_with_mode` form's mode; None is the default

    def mode_name(self) -> str:
        """The step's mode: `DEFAULT` for None and for the default mode (MODE01 / MODE012)."""
        return mode_text(self.mode)

    def arg1(self) -> int:
        """The step's second constant (the f32 bits of FMA_F's `c`; 0 for a binary op)."""
        return 0

    @rule("VE-STASH-4")
    def _same_shape(self) -> Violation | None:
        return stash_shape_fault(self, self.stashed)


@attrs.frozen(kw_only=True)
class StashLogic(_StashRead):
    """Logic cluster: `op(stream, stashed)` on the 32-bit patterns (i32 or f32)."""

    STAGE = "vector_logic"

    unit = logic_unit
    _family = logic_family


@attrs.frozen(kw_only=True)
class StashFxp(_StashRead):
    """Fxp cluster: `op(stream, stashed)` (i32)."""

    STAGE = "vector_fxp"
    UNIT = "FXP"


@attrs.frozen(kw_only=True)
class StashClip(_StashRead):
    """Clip cluster: `op(stream, stashed)` (i32 or f32)."""

    STAGE = "vector_clip"

    unit = clip_unit
    _family = clip_family


@attrs.frozen(kw_only=True)
class StashFpBinary(_StashRead):
    """Float cluster: `op(stream, stashed)` (4-way f32)."""

    STAGE = "vector_fp_binary"
    UNIT = "FP_BINARY"


@attrs.frozen(kw_only=True)
class StashFpTernary(_StashRead):
    """Float cluster: `FMA_F(stream, stashed, const1)` = stream * stashed + const1, rounded once
    (4-way f32; the mode, a TernaryArgMode, reads the stash as operand 1)."""

    STAGE = "vector_fp_ternary"
    UNIT = "FP_TERNARY"
    const1: Any = attr()

    def arg1(self) -> int:
        return f32_bits(self.const1)

    @rule("VE-CONST-3")
    def _const_kind(self) -> Violation | None:
        return _checked(scalars.f32_constant, self.const1)


@attrs.frozen(kw_only=True)
class StashFpDiv(_StashRead):
    """FpDiv stage: `DIV_F(stream, stashed)` = stream / stashed (4-way f32)."""

    STAGE = "vector_fp_div"
    UNIT = "FP_DIV"


STASH_READS: tuple[type, ...] = (StashLogic, StashFxp, StashClip, StashFpBinary, StashFpTernary, StashFpDiv)
STASH_OP_CLASSES: tuple[type, ...] = (VectorStash, *STASH_READS)
STASH_READ_OF: dict[str, type] = {cls.STAGE: cls for cls in STASH_READS}  # the reader of each stage
