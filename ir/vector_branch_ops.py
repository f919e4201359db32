"""Traced ops with branched operands (`Branched.imm(guard, value)...`), on a tagged stream.

`vector_fxp(op, Branched...)`, `vector_clip(...)`, `vector_fp_binary(...)` with a
`BranchedOperand` run `op(x, value_k)` on the elements whose execution id the guard of slot
k admits first; other elements keep their value. The ids are the tag unit's
(`vector_intra_slice_tag(TagMode.ZERO)` gives 0, `TagMode.COMPARISON([...])` sets bit i where
comparison i holds), computed from the stream at the tag: the op reads that stream as its
`tagged` operand. A pass with a comparison tag or a branched operand lowers to one
`vector_branch` record. A layout may end in a register-file slot (`Branched.rf(guard, vrf)`):
there the op reads the VRF tensor `rf[0]`, one value per element (the pass then lowers to a
`vector_branch_rf` record). Rules: VE-DTYPE-1, VE-CONST-1/3, VE-SHIFT-1 on every immediate,
VRF-2 on the VRF tensor.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.diagnostic import Violation
from ir.op_frame import attr, operand, rule
from ir.ops import Value
from ir.vector import enums as E
from ir.vector import scalars
from ir.vector.branch import BranchedOperand
from ir.vector.branching import cmps_of, cmps_text, guard_code, layout_of, layout_text
from ir.vector.numerics.steps import f32_bits
from ir.vector_ops import VectorOp, _checked
from ir.vrf_ops import rf_mismatch
from ir.vector_parts import clip_family, clip_unit, op_name

__all__ = ["BranchedFxp", "BranchedClip", "BranchedFpBinary", "BranchedLogic", "BranchedFpTernary",
           "BRANCH_OP_CLASSES", "tag_codes"]


def tag_codes(mode: Any) -> tuple[tuple[str, int], ...]:
    """(name, bound) of each comparison of a COMPARISON tag mode; () for ZERO."""
    from ir.vector.branching import cmp_code

    return tuple(cmp_code(c) for c in mode.cmps) if mode.is_(E.TagMode.COMPARISON) else ()


@attrs.frozen(kw_only=True)
class _Branched(VectorOp):
    TEXT_PREFIX = "branched_"  # its stages are the plain ops'; IR text tells them apart

    UNIT: ClassVar[str] = ""
    tagged: Value = operand()
    op: Any = attr()
    operand: BranchedOperand = attr(converter=layout_of)
    cmps: tuple = attr(converter=cmps_of)
    rf: tuple[Value, ...] = attrs.field(default=(), metadata={"role": "operand", "name": None})  # the rf slot's

    def attributes(self) -> list[tuple[str, Any]]:
        """The IR text spells the slots and comparisons as strings (`layout_text`, `cmps_text`)."""
        text = {"operand": layout_text(self.operand), "cmps": cmps_text(self.cmps)}
        return [(k, text.get(k, v)) for k, v in super().attributes()]

    def unit(self) -> str:
        return self.UNIT

    op_name = op_name

    def slots(self) -> tuple[tuple[int, int, int, int], ...]:
        """(mask, want, neg, value) per immediate slot, values as the step's arg (f32 as bits)."""
        f32 = self.scalar == "f32"
        return tuple((*guard_code(g), f32_bits(c.value) if f32 else int(c.value)) for g, c in self.operand.regs)

    def port(self) -> tuple[int, int, int] | None:
        """(mask, want, neg) of the register-file slot (`Branched.rf`), which reads `rf[0]`."""
        return guard_code(self.operand.port[0]) if self.operand.port is not None else None

    @rule("VRF-2")
    def _rf_match(self) -> Violation | None:
        return rf_mismatch(self)

    def _values(self, check: Any) -> Violation | None:
        for _, c in self.operand.regs:
            v = _checked(check, c.value)
            if v is not None:
                return v
        return None

    @rule("VE-CONST-3")
    def _kind(self) -> Violation | None:
        want = "f32" if self.scalar == "f32" else "i32"
        pair = self.UNIT == "FP_TERNARY"
        for _, c in self.operand.regs:
            if isinstance(c.value, tuple) != pair:
                return Violation("VE-CONST-3", f"a slot of `{self.STAGE}` holds "
                                 f"{'a pair (rhs, c)' if pair else 'one value'}, not {c.value!r}",
                                 help="FMA_F slots hold (rhs, c) pairs; the binary ops one value per slot")
            if pair:
                continue
            if c.scalar != want and not (want == "f32" and float(c.value).is_integer()):
                return Violation("VE-CONST-3", f"a slot of `{self.STAGE}` holds an {c.scalar} value, the stream "
                                 f"holds {want}", help=f"write the slot value as an {want} constant")
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
    """Logic cluster with a branched operand (i32 bits, or the bit patterns of f32). It has
    immediate slots only: the logic units have no register-file form."""

    STAGE = "vector_logic"

    def unit(self) -> str:
        return "LOGIC_F32" if self.scalar == "f32" else "LOGIC_I32"

    @rule("VE-DTYPE-1")
    def _family(self) -> Violation | None:
        from ir.vector_ops import _dtype_fault

        return _dtype_fault(self, {"i32": E.LogicBinaryOpI32, "f32": E.LogicBinaryOpF32}, "`vector_logic`")

    @rule("VE-CONST-1")
    def _range(self) -> Violation | None:
        return self._values(scalars.i32_constant if self.scalar == "i32" else scalars.f32_constant)

    @rule("VE-SHIFT-1")
    def _shift(self) -> Violation | None:
        return self._values(scalars.shift_amount) if self.scalar == "i32" and "SHIFT" in self.op.name else None

    @rule("VRF-2")
    def _rf_match(self) -> Violation | None:
        if self.operand.port is not None:
            return Violation("VRF-2", "`vector_logic` reads no VRF tensor: its branched operand has immediate "
                                      "slots only", help="drop the `.rf(...)` slot, or move that op to "
                                                         "vector_fxp / vector_clip")
        return None


@attrs.frozen(kw_only=True)
class BranchedFpTernary(_Branched):
    """Float cluster's FMA_F with a branched operand (4-way f32): slot k holds (rhs_k, c_k), and
    an admitted element becomes x * rhs_k + c_k, rounded once. Immediate slots only here."""

    STAGE = "vector_fp_ternary"
    UNIT = "FP_TERNARY"

    def slots(self) -> tuple[tuple[int, int, int, int, int], ...]:
        """(mask, want, neg, rhs bits, c bits) per slot."""
        return tuple((*guard_code(g), f32_bits(c.value[0]), f32_bits(c.value[1])) for g, c in self.operand.regs)

    @rule("VE-CONST-2")
    def _range(self) -> Violation | None:
        for _, c in self.operand.regs:
            for v in (c.value if isinstance(c.value, tuple) else (c.value,)):
                bad = _checked(scalars.f32_constant, v)
                if bad is not None:
                    return bad
        return None

    @rule("VRF-2")
    def _rf_match(self) -> Violation | None:
        if self.operand.port is not None:
            return Violation("VRF-2", "a branched `vector_fp_ternary` reads no VRF tensor here: its slots are "
                                      "(rhs, c) immediates", help="drop the `.rf(...)` slot")
        return None


BRANCH_OP_CLASSES: tuple[type, ...] = (BranchedFxp, BranchedClip, BranchedFpBinary, BranchedLogic, BranchedFpTernary)
