"""Traced ops of the stash: `vector_stash()` snapshots the stream, and one later binary op
reads the snapshot as its operand (`vector_clip(op, Stash)`: `op(stream, stashed)`).

The stash is write-once and read-once per pass, and read at the scalar and way it was
written with (the DSL checks the order: VE-STASH-1 a read before the write, VE-STASH-2 a
second read, VE-STASH-3 a second write, VE-STASH-5 pair mode; the op checks VE-STASH-4).
A pass with a stash lowers to one `vector_branch` record.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.diagnostic import Violation
from ir.op_frame import attr, operand, rule
from ir.ops import Value
from ir.vector_ops import VectorOp
from ir.vector_parts import clip_family, clip_unit, op_name

__all__ = ["VectorStash", "StashFxp", "StashClip", "StashFpBinary", "STASH_OP_CLASSES", "STASH_READS"]


@attrs.frozen(kw_only=True)
class VectorStash(VectorOp):
    """Snapshot the stream into the stash (the stream goes on unchanged)."""

    STAGE = "vector_stash"


@attrs.frozen(kw_only=True)
class _StashRead(VectorOp):
    TEXT_PREFIX = "stashed_"  # its stages are the plain ops'; IR text tells them apart

    UNIT: ClassVar[str] = ""
    stashed: Value = operand()
    op: Any = attr()

    def unit(self) -> str:
        return self.UNIT

    op_name = op_name

    @rule("VE-STASH-4")
    def _same_shape(self) -> Violation | None:
        s, t = self.stashed.type, self.input.type
        if s.dtype == t.dtype and s.packet.size == t.packet.size:
            return None
        return Violation("VE-STASH-4", f"`{self.STAGE}` reads the stash at {t.packet.size} x {t.dtype}; it was written "
                         f"at {s.packet.size} x {s.dtype}", label="the stash is read at the scalar and way of its write",
                         help="stash where the stream has the reader's scalar and way (e.g. after the widen, at Clip)")


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


STASH_READS: tuple[type, ...] = (StashFxp, StashClip, StashFpBinary)
STASH_OP_CLASSES: tuple[type, ...] = (VectorStash, *STASH_READS)
