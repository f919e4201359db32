"""Tag guards, guarded operand layouts, and the tag unit's comparison ids.

Every element carries a four-bit execution id, set by the tag unit (`TagMode`): ZERO
gives 0; COMPARISON sets bit i where comparison i holds; AXIS_TOGGLE sets bit 3 from the
parity of an axis index (computed by the stream, which knows the mapping). Bit 3 is the
element's group. A `TagGuard` is a predicate on the id; a `BranchedOperand` holds up to
three guarded immediates and one guarded register-file read, and an element takes the
first filled slot, in that order, whose guard admits it.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.vector.enums import BitReq, Cmp, GroupId
from ir.vector.errors import refuse
from ir.vector.numerics._arrays import as_f32, as_i32
from ir.vector.operands import Constant, StashOperand, VrfOperand

__all__ = ["TagGuard", "BranchedOperand", "comparison_ids", "group_only"]

_FREE = (BitReq.IGNORE,) * 4


@attrs.frozen
class TagGuard:
    """A predicate on execution ids: a pattern of four BitReq (bit 0 first), negated or
    not. Built only through the constructors, which fold equal spellings together."""

    bits: tuple = _FREE
    negated: bool = False

    @classmethod
    def all(cls) -> TagGuard:
        """Admits every element (the unconditional guard, a pass's `else`)."""
        return cls()

    @classmethod
    def matches(cls, bits: Any) -> TagGuard:
        """Admits ids whose bits satisfy `bits` (four BitReq, bit 0 first)."""
        return cls(_pattern(bits))

    @classmethod
    def not_matches(cls, bits: Any) -> TagGuard:
        """Admits ids that do not satisfy `bits`; negating a group bit alone names the
        other group."""
        pattern = _pattern(bits)
        if pattern[:3] == _FREE[:3] and pattern[3] != BitReq.IGNORE:
            return cls.group(GroupId.ZERO if pattern[3] == BitReq.ONE else GroupId.ONE)
        return cls(pattern, True)

    @classmethod
    def group(cls, group: GroupId) -> TagGuard:
        """Admits the elements of one group (bit 3)."""
        return cls((*_FREE[:3], BitReq.ONE if group == GroupId.ONE else BitReq.ZERO))

    @property
    def is_unconditional(self) -> bool:
        return self.bits == _FREE and not self.negated

    @property
    def admits_nothing(self) -> bool:
        return self.bits == _FREE and self.negated


def group_only(guard: TagGuard) -> bool:
    """Whether `guard` constrains the group bit (bit 3) and nothing else: a stash read under
    such a guard cannot be told from a zip's read of the other group (VE-SLOT-6)."""
    return guard.bits[:3] == _FREE[:3] and guard.bits[3] != BitReq.IGNORE


def _pattern(bits: Any) -> tuple:
    if not isinstance(bits, (list, tuple)) or len(bits) != 4 or not all(isinstance(b, BitReq) for b in bits):
        raise refuse("VE-ENUM-3", f"a tag guard pattern is four BitReq, got {bits!r}")
    return tuple(bits)


@attrs.frozen
class BranchedOperand:
    """Guarded operand slots: up to three immediates, then at most one register-file read
    (a VRF tensor or the stash). Built with `imm(...)` / `rf(...)`, which enforce the
    order and the slot rules (VE-SLOT-*)."""

    regs: tuple = ()
    port: tuple | None = None

    @classmethod
    def start(cls) -> BranchedOperand:
        return cls()

    def imm(self, guard: TagGuard, value: Constant) -> BranchedOperand:
        """Add a guarded immediate (VE-SLOT-3 after the rf slot, VE-SLOT-4 past three)."""
        if self.port is not None:
            raise refuse("VE-SLOT-3", "an immediate slot cannot follow the register-file slot", method="imm")
        if len(self.regs) == 3:
            raise refuse("VE-SLOT-4", "a pass has three immediate registers, all filled", method="imm")
        return self._checked(BranchedOperand((*self.regs, (guard, value)), None), "imm")

    def rf(self, guard: TagGuard, source: VrfOperand | StashOperand) -> BranchedOperand:
        """Add the guarded register-file read (VE-SLOT-3 if it is already filled)."""
        if self.port is not None:
            raise refuse("VE-SLOT-3", "the register-file slot is already filled", method="rf")
        return self._checked(BranchedOperand(self.regs, (guard, source)), "rf")

    def slots(self) -> list[tuple[TagGuard, Any]]:
        """The filled slots in match order."""
        return [*self.regs, *([self.port] if self.port else [])]

    def _checked(self, layout: BranchedOperand, method: str) -> BranchedOperand:
        slots = layout.slots()
        guard = slots[-1][0]
        if guard.admits_nothing:
            raise refuse("VE-SLOT-2", f"slot {len(slots) - 1}'s guard admits no execution id", method=method)
        if any(g.is_unconditional for g, _ in slots[:-1]):
            raise refuse("VE-SLOT-5", "a slot after an unconditional one can never fire", method=method)
        return layout


def _holds(cmp: Cmp, x: np.ndarray) -> np.ndarray:
    if not cmp.values:
        return np.full(x.shape, cmp.name == "TRUE")
    b = cmp.boundary
    with np.errstate(invalid="ignore"):
        if cmp.name in ("LESS_UNSIGNED", "GREATER_UNSIGNED"):
            xu, bu = x.view(np.uint32), np.asarray(b, dtype=x.dtype).view(np.uint32)
            return xu < bu if cmp.name == "LESS_UNSIGNED" else xu > bu
        return {"EQUAL": x == b, "LESS": x < b, "GREATER": x > b}[cmp.name]


def comparison_ids(x: Any, cmps: tuple) -> np.ndarray:
    """`TagMode.COMPARISON(cmps)`: bit i of each element's id is set where cmps[i] holds
    (EQUAL: ==, so -0.0 equals 0.0 and NaN equals nothing; LESS / GREATER: signed i32 or
    IEEE f32 order, false for NaN; the UNSIGNED forms compare the 32-bit patterns)."""
    arr = np.asarray(x)
    arr = as_f32(arr) if arr.dtype == np.float32 else as_i32(arr)
    ids = np.zeros(arr.shape, dtype=np.uint8)
    for bit, cmp in enumerate(cmps):
        ids |= _holds(cmp, arr).astype(np.uint8) << bit
    return ids
