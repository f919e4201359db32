"""Traced ops with branched operands (`Branched.imm(guard, value)...`), on a tagged stream.

`vector_logic(op, Branched...)`, `vector_fxp(...)`, `vector_clip(...)`, `vector_fp_binary(...)`,
`vector_fp_div(...)` with a `BranchedOperand` (and the `mode` of a `_with_mode` form) run `op(x, value_k)` on the elements whose execution id the guard of slot
k admits first; other elements keep their value. The ids are the tag unit's
(`vector_intra_slice_tag(TagMode.ZERO)` gives 0, `TagMode.COMPARISON([...])` sets bit i where
comparison i holds), computed from the stream at the tag: the op reads that stream as its
`tagged` operand. A pass with a comparison tag or a branched operand lowers to one
`vector_branch` record. A layout may end in a register-file slot (`Branched.rf(guard, vrf)`):
there the op reads the VRF tensor `rf[0]`, one value per element (the pass then lowers to a
`vector_branch_rf` record), or, with `Branched.rf(guard, Stash)`, the stash `stashed[0]`
(VE-STASH-4; VE-SLOT-6 for a guard on the group bit alone). Rules: VE-DTYPE-1, VE-CONST-1/3, VE-SHIFT-1 on every immediate,
VRF-2 on the VRF tensor.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.op_frame import attr, operand, rule
from ir.ops import Value
from ir.vector import enums as E
from ir.vector import scalars
from ir.vector.branch import BranchedOperand, group_only
from ir.vector.operands import StashOperand, TernaryOperand
from ir.vector.branching import cmp_code, cmps_of, cmps_text, guard_code, layout_of, layout_text
from ir.vector.numerics._arrays import f32_bits
from ir.vector.ops import VectorOp, _checked, _first_fault, amount_is_const, clip_family, logic_family
from ir.vrf_ops import rf_mismatch
from ir.vector.parts import UnitStep, clip_unit, logic_unit
from ir.vector.stash_ops import stash_shape_fault
from ir.words import a_an

__all__ = ["BranchedFxp", "BranchedClip", "BranchedFpBinary", "BranchedLogic", "BranchedFpDiv", "BranchedFpTernary", "BRANCH_OP_CLASSES",
           "tag_codes"]


def tag_codes(mode: Any) -> tuple[tuple[str, int], ...]:
    """(name, bound) of each comparison of a COMPARISON tag mode; () for ZERO."""
    return tuple(cmp_code(c) for c in mode.cmps) if mode.is_(E.TagMode.COMPARISON) else ()


def _stash_operands(fields: dict[str, Any]) -> int:
    """How many IR text operands `stashed` takes: one when the parsed layout's rf slot reads the stash."""
    port = layout_of(fields.get("operand", "")).port
    return int(port is not None and isinstance(getattr(port[1], "rhs", port[1]), StashOperand))


@attrs.frozen(kw_only=True)
class _Branched(UnitStep, VectorOp):
    TEXT_PREFIX = "branched_"  # its stages are the plain ops'; IR text tells them apart

    tagged: Value = operand()
    op: Any = attr()
    operand: BranchedOperand = attr(converter=layout_of)
    cmps: tuple = attr(converter=cmps_of)
    # the stashed value the rf slot reads (`Branched.rf(guard, Stash)`); IR text gives it one operand then
    stashed: tuple[Value, ...] = attrs.field(default=(), metadata={"role": "operand", "name": None,
                                                                   "count": _stash_operands})
    rf: tuple[Value, ...] = attrs.field(default=(), metadata={"role": "operand", "name": None})  # the rf slot's
    mode: Any = attr(default=None, optional=True)  # the `_with_mode` form's mode, read by every slot

    def attributes(self) -> list[tuple[str, Any]]:
        """The IR text spells the slots and comparisons as strings (`layout_text`, `cmps_text`)."""
        text = {"operand": layout_text(self.operand), "cmps": cmps_text(self.cmps)}
        return [(k, text.get(k, v)) for k, v in super().attributes()]

    def slots(self) -> tuple[tuple[int, int, int, int], ...]:
        """(mask, want, neg, value) per immediate slot, values as the step's arg (f32 as bits)."""
        f32 = self.scalar == "f32"
        return tuple((*guard_code(g), f32_bits(c.value) if f32 else int(c.value)) for g, c in self.operand.regs)

    def port_arg1(self) -> int:
        """The rf slot's second constant (FMA_F's `c`; 0 for a binary op)."""
        return 0

    def port(self) -> tuple[int, int, int] | None:
        """(mask, want, neg) of the register-file slot (`Branched.rf`), which reads `rf[0]`."""
        return guard_code(self.operand.port[0]) if self.operand.port is not None else None

    def mode_name(self) -> str:
        """The step's mode: `DEFAULT` for None and for MODE01."""
        name = getattr(self.mode, "name", None)
        return "DEFAULT" if name in (None, "MODE01") else name

    def port_reads_stash(self) -> bool:
        """Whether the register-file slot reads the stash (its value: `stashed[0]`)."""
        return self.operand.port is not None and isinstance(self.operand.port[1], StashOperand)

    _rf_match = rf_mismatch

    @rule("VE-STASH-4")
    def _stash_shape(self) -> Violation | None:
        return stash_shape_fault(self, self.stashed[0]) if self.stashed else None

    @rule("VE-SLOT-6")
    def _stash_guard(self) -> Violation | None:
        if not self.port_reads_stash() or not group_only(self.operand.port[0]):
            return None
        return Violation("VE-SLOT-6", f"`{self.STAGE}` reads the stash in a slot guarded on the group bit (bit 3) "
                         "alone", label="a stash read under a group-only guard",
                         help="constrain one of bits 0 ... 2 as well, or read the stash unconditionally "
                              "(`TagGuard.all()`, or `Stash` as the whole operand)")

    def _values(self, check: Any) -> Violation | None:
        return _first_fault(check, (c.value for _, c in self.operand.regs))

    @rule("VE-CONST-3")
    def _kind(self) -> Violation | None:
        want = "f32" if self.scalar == "f32" else "i32"
        pairs = [c for _, c in self.operand.slots() if isinstance(c, TernaryOperand)]
        if pairs:
            return Violation("VE-CONST-3", f"a slot of `{self.STAGE}` holds an (operand, c) pair; the op takes one "
                             "operand", help="a pair is FMA_F's (`vector_fp_ternary`); write one value per slot")
        for _, c in self.operand.regs:
            if c.scalar != want and not (want == "f32" and float(c.value).is_integer()):
                return Violation("VE-CONST-3", f"a slot of `{self.STAGE}` holds {a_an(c.scalar)} value, the stream "
                                 f"holds {want}", help=f"write the slot value as {a_an(want)} constant")
        return None


@attrs.frozen(kw_only=True)
class BranchedFxp(_Branched):
    """Fxp cluster with a branched operand (i32)."""

    STAGE = "vector_fxp"
    UNIT = "FXP"

    @rule("VE-CONST-1")
    def _range(self) -> Violation | None:
        return self._values(scalars.i32_constant)

    @rule("VE-SHIFT-1")
    def _shift(self) -> Violation | None:
        return self._values(scalars.shift_amount) if self.op.is_shift else None


@attrs.frozen(kw_only=True)
class BranchedClip(_Branched):
    """Clip cluster with a branched operand (i32 or f32)."""

    STAGE = "vector_clip"

    unit = clip_unit
    _family = clip_family

    @rule("VE-CONST-1")
    def _range(self) -> Violation | None:
        return self._values(scalars.i32_constant if self.scalar == "i32" else scalars.f32_constant)


@attrs.frozen(kw_only=True)
class BranchedFpBinary(_Branched):
    """Float cluster with a branched operand (4-way f32)."""

    STAGE = "vector_fp_binary"
    UNIT = "FP_BINARY"

    @rule("VE-CONST-2")
    def _range(self) -> Violation | None:
        return self._values(scalars.f32_constant)


@attrs.frozen(kw_only=True)
class BranchedLogic(_Branched):
    """Logic cluster with a branched operand (the 32-bit patterns of i32 or f32); its rf slot
    reads the stash only (VRF-7 at the DSL for a VRF tensor)."""

    STAGE = "vector_logic"

    unit = logic_unit
    _family = logic_family

    @rule("VE-CONST-1")
    def _range(self) -> Violation | None:
        return self._values(scalars.i32_constant if self.scalar == "i32" else scalars.f32_constant)

    @rule("VE-SHIFT-1")
    def _shift(self) -> Violation | None:
        shift = self.scalar == "i32" and self.op.name.endswith("SHIFT") and amount_is_const(self.mode)
        return self._values(scalars.shift_amount) if shift else None


@attrs.frozen(kw_only=True)
class BranchedFpDiv(_Branched):
    """FpDiv stage with a branched operand (4-way f32)."""

    STAGE = "vector_fp_div"
    UNIT = "FP_DIV"

    @rule("VE-CONST-2")
    def _range(self) -> Violation | None:
        return self._values(scalars.f32_constant)


@attrs.frozen(kw_only=True)
class BranchedFpTernary(_Branched):
    """Float cluster: FMA_F with a branched operand (4-way f32): each slot holds its own pair,
    `(a, c)` an immediate (`stream * a + c`), `(Stash, c)` the rf slot; `slots()` gives the
    bits of both."""

    STAGE = "vector_fp_ternary"
    UNIT = "FP_TERNARY"

    def slots(self) -> tuple[tuple[int, ...], ...]:
        """(mask, want, neg, a, c) per immediate slot, a and c as f32 bits."""
        return tuple((*guard_code(g), f32_bits(p.rhs.value), f32_bits(p.operand1.value)) for g, p in self.operand.regs
                     if isinstance(p, TernaryOperand))

    def port_arg1(self) -> int:
        """The f32 bits of the rf slot's `c`."""
        return f32_bits(self.operand.port[1].operand1.value)

    def port_reads_stash(self) -> bool:
        port = self.operand.port
        return port is not None and isinstance(getattr(port[1], "rhs", None), StashOperand)

    @rule("VE-CONST-3")
    def _kind(self) -> Violation | None:
        for _, p in self.operand.slots():
            if not isinstance(p, TernaryOperand):
                return Violation("VE-CONST-3", "a slot of `vector_fp_ternary` holds FMA_F's pair (operand, c), not "
                                 f"{p}", help="write `Branched.imm(guard, (2.0, 0.5))` or `.rf(guard, (Stash, 0.5))`")
            if p.rhs is not None and not isinstance(p.rhs, StashOperand):
                bad = _checked(scalars.f32_constant, p.rhs.value) if hasattr(p.rhs, "value") else None
                if bad is not None:
                    return bad
            bad = _checked(scalars.f32_constant, p.operand1.value)
            if bad is not None:
                return bad
        return None


BRANCH_OP_CLASSES: tuple[type, ...] = (BranchedFxp, BranchedClip, BranchedFpBinary, BranchedLogic, BranchedFpDiv,
                                       BranchedFpTernary)
