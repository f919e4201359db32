"""Traced ops of the rest of the Vector Engine's element-wise chain: the Logic cluster, the
fused multiply-add, the FpDiv stage, the two data-moving way changes and the reinterpret.

Each types its own result and declares its rules, as the ops of `ir.vector.ops` do; all
are `FOLDED` into the pass's one `vector` record. An operand is a constant here (the DSL
resolves the kernel's operand; a VRF operand is another kind of `const`).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.errors import MappingError
from ir.mapping.nodes import Mapping, written
from ir.op_frame import attr, rule
from ir.types import Type
from ir.vector import enums as E
from ir.vector import scalars, ways
from ir.vector.ops import RfUnitOp, UnitOp, _checked, _f32_kind, amount_is_const, logic_family

__all__ = ["VectorLogic", "VectorFpTernary", "VectorFpDiv", "VectorNarrowSplit", "VectorWidenConcat",
           "VectorReinterpret", "LOGIC_SHIFTS"]

LOGIC_SHIFTS = frozenset({"LEFT_SHIFT", "LOGIC_RIGHT_SHIFT", "ARITH_RIGHT_SHIFT"})  # the i32 Logic shifts


@attrs.frozen(kw_only=True)
class VectorLogic(UnitOp):
    """Logic cluster: `op(stream, const)` on i32 bits (and, shifts) or on the bit patterns of f32."""

    STAGE = "vector_logic"
    op: Any = attr()
    const: Any = attr()
    mode: Any = attr(default=None)

    _family = logic_family

    @rule("VE-CONST-3")
    def _const_kind(self) -> Violation | None:
        if self.scalar == "i32":
            return _checked(scalars.i32_constant, self.const) if not isinstance(self.const, int) else None
        return _checked(scalars.f32_constant, self.const)

    @rule("VE-CONST-1")
    def _const_range(self) -> Violation | None:
        return _checked(scalars.i32_constant, self.const) if self.scalar == "i32" else None

    @rule("VE-SHIFT-1")
    def _shift(self) -> Violation | None:
        if self.scalar == "i32" and self.op.name in LOGIC_SHIFTS and amount_is_const(self.mode):
            return _checked(scalars.shift_amount, self.const)
        return None


@attrs.frozen(kw_only=True)
class VectorFpTernary(UnitOp):
    """Float cluster: `FMA_F(stream, const, const1)` = stream * const + const1, one rounding
    (under the default mode MODE012)."""

    STAGE = "vector_fp_ternary"
    op: E.FpTernaryOp = attr()
    const: Any = attr()
    const1: Any = attr()
    mode: Any = attr(default=None)

    @rule("VE-CONST-3")
    def _const_kind(self) -> Violation | None:
        return _checked(scalars.f32_constant, self.const) or _checked(scalars.f32_constant, self.const1)


@attrs.frozen(kw_only=True)
class VectorFpDiv(RfUnitOp):
    """FpDiv stage: `DIV_F(stream, const)` = stream / const in f32 (under MODE01); with `rf`,
    the divisor is the VRF tensor's value at each stream cell (RMSNorm's per-row divisor)."""

    STAGE = "vector_fp_div"
    op: E.FpDivBinaryOp = attr()
    const: Any = attr()
    mode: Any = attr(default=None)

    _f32_kind = _f32_kind


def _text(mapping: Mapping) -> str:
    """A mapping as a kernel writes it inside `m("...")` (no parentheses round a top-level pair)."""
    return written(mapping)


@attrs.frozen(kw_only=True)
class VectorNarrowSplit(UnitOp):
    """8-way -> 4-way keeping every cell: flit t becomes steps 2t (front four) and 2t + 1
    (back four); `time` is (Time, Packet / 4), `packet` Packet % 4."""

    STAGE = "vector_narrow_split"
    RETYPED = ("time", "packet")
    time: Mapping = attr()
    packet: Mapping = attr()

    @rule("VE-SPLIT-1")
    def _one_flit(self) -> Violation | None:
        p = self.input.type.packet
        if p.size == ways.FLIT:
            return None
        return Violation("VE-SPLIT-1", f"`vector_narrow_split` splits a flit of 8 cells, not the packet {p} of {p.size}")

    @rule("VE-SPLIT-2")
    def _time(self) -> Violation | None:
        t, p = self.input.type.time, self.input.type.packet
        if p.size != ways.FLIT:
            return None
        want, _ = ways.split_shape(t, p)
        got = self.time.normalize()
        return None if want.equivalent(got) else Violation(
            "VE-SPLIT-2", f"the split's time {self.time} is not the input time with the back half folded in",
            label=f"expected {_text(want)}", help=f"write `m(\"{_text(want)}\")`: the back four cells become the innermost time step")

    @rule("VE-SPLIT-3")
    def _size(self) -> Violation | None:
        if self.packet.size == ways.HALF:
            return None
        return Violation("VE-SPLIT-3", f"the split's packet {self.packet} has {self.packet.size} cells, not 4",
                         help="a 4-way packet is the front half of a flit")

    @rule("VE-SPLIT-4")
    def _packet(self) -> Violation | None:
        p = self.input.type.packet
        if p.size != ways.FLIT or self.packet.size != ways.HALF:
            return None
        _, want = ways.split_shape(self.input.type.time, p)
        return None if want.equivalent(self.packet) else Violation(
            "VE-SPLIT-4", f"the split's packet {self.packet} is not the front half of {p}", label=f"expected {_text(want)}",
            help=f"write `m(\"{_text(want)}\")`")


@attrs.frozen(kw_only=True)
class VectorWidenConcat(UnitOp):
    """4-way -> 8-way, the split's inverse: steps 2t and 2t + 1 rejoin as flit t; `time` is
    Time / 2, `packet` (Time % 2, Packet)."""

    STAGE = "vector_widen_concat"
    RETYPED = ("time", "packet")
    time: Mapping = attr()
    packet: Mapping = attr()

    def _want(self) -> tuple[Mapping, Mapping] | None:
        try:
            return ways.concat_shape(self.input.type.time, self.input.type.packet)
        except MappingError:
            return None

    @rule("VE-CONCAT-1")
    def _way4(self) -> Violation | None:
        p = self.input.type.packet
        return None if p.size == ways.HALF else Violation(
            "VE-CONCAT-1", f"`vector_widen_concat` joins 4-cell packets, not the packet {p} of {p.size}")

    @rule("VE-CONCAT-2")
    def _size(self) -> Violation | None:
        return None if self.packet.size == ways.FLIT else Violation(
            "VE-CONCAT-2", f"the concat's packet {self.packet} has {self.packet.size} cells, not 8",
            help="a concat rejoins two 4-cell packets into one flit")

    @rule("VE-CONCAT-3")
    def _time(self) -> Violation | None:
        want = self._want()
        t = self.input.type.time
        if want is None:
            return Violation("VE-CONCAT-3", f"the input time {t} has {t.size} steps: a concat joins pairs of them")
        return None if want[0].equivalent(self.time) else Violation(
            "VE-CONCAT-3", f"the concat's time {self.time} does not unfold the two halves from {t}",
            label=f"expected {_text(want[0])}", help=f"write `m(\"{_text(want[0])}\")`")

    @rule("VE-CONCAT-4")
    def _packet(self) -> Violation | None:
        want = self._want()
        if want is None or self.packet.size != ways.FLIT or self.input.type.packet.size != ways.HALF:
            return None
        return None if want[1].equivalent(self.packet) else Violation(
            "VE-CONCAT-4", f"the concat's packet {self.packet} is not the two halves rejoined",
            label=f"expected {_text(want[1])}", help=f"write `m(\"{_text(want[1])}\")`")


@attrs.frozen(kw_only=True)
class VectorReinterpret(UnitOp):
    """The stream's 32-bit patterns reread as the other scalar (1.0f32 <-> 1065353216). No
    instruction, no ALU, no stage: it may sit anywhere in the chain."""

    STAGE = "vector_reinterpret"
    scalar_to: str = attr()

    def infer_type(self) -> Type:
        return attrs.evolve(self.input.type, dtype=DType.I32 if self.scalar_to == "i32" else DType.F32)
