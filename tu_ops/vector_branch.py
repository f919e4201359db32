"""The lowered tagged pass: one `vector_branch` record per `vector_init ... vector_final` with
a comparison tag or a branched operand.

Text: `%7 = vector_branch in=%6 tag=[{cmp=LESS, bound=0}, {cmp=FALSE, bound=0}, ...]
steps=[{unit=FXP, op=MUL_INT, arg=0, slots=[{mask=1, want=1, neg=0, value=0}]}] : <s> -> <s>`.
`tag` lists the four comparisons of `TagMode.COMPARISON` (bound: an i32, or an f32's bits),
empty for `TagMode.ZERO`. A step with `slots` runs `op(x, value_k)` where slot k's guard is
the first to admit the element's execution id (`((id & mask) == want) != neg`), leaving the
other elements alone; a step without slots runs with its `arg` (and its `mode` / `arg1`,
printed only when set), as in the `vector` record.
`stash_at` is the number of steps run before the stream is stashed (-1: no stash); the one
step with `stash=1` reads the stash as its operand (under its `mode`; an FMA_F's `arg1` is
its `c`), or the one slot with `port=2` (the rf slot) reads it where its guard admits. Rules VBR-1 (the steps form a `vector`
pass: VEOP-1...3 of the same steps), VBR-2 (the tag), VBR-3 (the slots: at most three, none
inert, none after an unconditional one, values legal; a last `port=1` slot reads VRF tensor
`value` of a `vector_branch_rf` record), VBR-4 (the stash: written once, read
at most once after the write, at the scalar and way of the write).

A tagged pass that reads the VRF is `vector_branch_rf`, the `vector_branch` record with the
`rf` / `rf_read` fields of a `vector_rf` record.

Text: `%9 = vector_branch_rf in=%8 rf=[%5] tag=[...] stash_at=-1 steps=[..., {unit=FP_BINARY_RF,
op=SUB_F, arg=0, slots=[], stash=0}, ...] rf_read=[{time=[...], packet=[...]}] : <s> -> <s>`.
An `_RF` step's arg, and the `value` of a step's last slot with
`port=1` (`Branched.rf`), is the index of the VRF tensor it reads, through the pass's one
register-file port, at the word `rf_read` names for each stream cell. Rules VBR-1 ... VBR-4
as for `vector_branch`; VBR-1 checks the pass as the `vector_rf` record it would be without
its tag and slots, so it covers the VRF reads too (VEOP-5 / VEOP-6: the walks cover the
stream, each names a loaded tensor of the stream's scalar and stays inside it).
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs

from ir.vector.units import UNITS, is_rf, spec_of
from tu_ops.base import Derivation, Ref, VerifyContext, attr, operand, rule
from tu_ops.valid_count import PackConfig
from tu_ops.vector import _SCALAR, VectorEngineOp, VectorPass, VeMode, VeOpName, VeStep, VeUnit, _arg_problem
from tu_ops.vrf import RfRead, VectorRfOp, first_reads, rf_types, walk
from ir.words import a_an

__all__ = ["CmpName", "TagCmp", "Slot", "BranchStep", "VectorBranchOp", "VectorBranchRfOp"]


class CmpName(enum.Enum):
    """A comparison of the tag unit."""

    EQUAL = "equal"
    LESS = "less"
    GREATER = "greater"
    LESS_UNSIGNED = "less_unsigned"
    GREATER_UNSIGNED = "greater_unsigned"
    TRUE = "true"
    FALSE = "false"


@attrs.frozen
class TagCmp:
    TEXT_STYLE: ClassVar[str] = "struct"
    cmp: CmpName
    bound: int


@attrs.frozen
class Slot:
    """A guarded immediate: admits ids with `((id & mask) == want) != neg`."""

    TEXT_STYLE: ClassVar[str] = "struct"
    mask: int
    want: int
    neg: int
    value: int
    port: int = attrs.field(default=0, metadata={"omit_default": True})  # 1: the rf slot, value its tensor's index;
    # 2: the rf slot reads the stash (value 0)
    value1: int = attrs.field(default=0, metadata={"omit_default": True})  # FMA_F's `c` of this slot (f32 bits)


@attrs.frozen
class BranchStep:
    TEXT_STYLE: ClassVar[str] = "struct"
    unit: VeUnit
    op: VeOpName
    arg: int
    slots: tuple[Slot, ...] = attrs.field(converter=tuple)
    stash: int = 0  # 1: the operand is the stash
    mode: VeMode = attrs.field(default=VeMode.DEFAULT, metadata={"omit_default": True})  # as in a `vector` step
    arg1: int = attrs.field(default=0, metadata={"omit_default": True})
    vcg: PackConfig | None = attrs.field(default=None, metadata={"omit_default": True})  # as in a `vector` step


@attrs.frozen(kw_only=True)
class VectorBranchOp(VectorPass):
    """The Vector Engine configured for one tagged pass over the stream."""

    MNEMONIC: ClassVar[str] = "vector_branch"
    PIPELINE_RANK: ClassVar[int] = 76
    FEED_DEST: ClassVar[str | None] = "VECTOR_BRANCH"

    tag: tuple[TagCmp, ...] = attr(converter=tuple)
    stash_at: int = attr()
    steps: tuple[BranchStep, ...] = attr(converter=tuple)

    def plain(self) -> VectorEngineOp:
        """The same pass without its tag and slots."""
        steps = [VeStep(VeUnit.TAG, VeOpName.ZERO, 0)]
        steps += [VeStep(s.unit, s.op, s.arg, s.mode, s.arg1, s.vcg) for s in self.steps]  # VBR-3 checks the slot values
        return VectorEngineOp(result=self.result, input=self.input, steps=tuple(steps), input_type=self.input_type,
                              output_type=self.output_type)

    @rule("VBR-1")
    def _pass(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if any(s.unit is VeUnit.TAG for s in self.steps):
            return "the tag is the record's `tag`, not a step"
        error = self.plain().first_failure(target, ctx)
        return None if error is None else error.message

    @rule("VBR-2")
    def _tag(self, target: Any, ctx: VerifyContext | None) -> str | None:
        if len(self.tag) not in (0, 4):
            return f"a comparison tag has four comparisons, not {len(self.tag)}"
        scalar = _SCALAR.get(self.input_type.dtype)
        for i, c in enumerate(self.tag):
            if c.cmp in (CmpName.TRUE, CmpName.FALSE) and c.bound != 0:
                return f"comparison {i} ({c.cmp.name}) takes no bound (0), not {c.bound}"
            limits = (-(2**31), 2**31) if scalar == "i32" else (0, 2**32)
            if not limits[0] <= c.bound < limits[1]:
                return f"comparison {i}: bound {c.bound} is not {a_an(scalar)} value"
        return None

    @rule("VBR-3")
    def _slots(self, target: Any, ctx: VerifyContext | None) -> str | None:
        for i, s in enumerate(self.steps):
            if s.slots and (s.arg != 0 or sum(not slot.port for slot in s.slots) > 3):
                return f"step {i}: a branched step has arg 0 and at most three immediate slots"
            ports = [k for k, slot in enumerate(s.slots) if slot.port]
            if ports and ports != [len(s.slots) - 1]:
                return f"step {i}: the register-file slot is the last slot, once"
            if ports and s.slots[-1].port == 1 and not hasattr(self, "rf_read"):
                return f"step {i}: a register-file slot needs a `vector_branch_rf` record"
            if ports and s.slots[-1].port == 1 and "rf" not in spec_of(s.unit).kinds:
                return f"step {i}: {s.unit.name} has no register-file read (its rf slot may read the stash only)"
            for k, slot in enumerate(s.slots):
                problem = _port_problem(slot, len(getattr(self, "rf", ())))
                if problem:
                    return f"step {i} slot {k}: {problem}"
                if not (0 <= slot.mask < 16 and slot.want & ~slot.mask == 0 and slot.neg in (0, 1)):
                    return f"step {i} slot {k}: a guard is a 4-bit mask, a want within it and neg 0 or 1"
                if slot.mask == 0 and slot.neg:
                    return f"step {i} slot {k}: the guard admits no execution id"
                if k and any(o.mask == 0 and not o.neg for o in s.slots[:k]):
                    return f"step {i} slot {k} follows an unconditional slot and can never fire"
                problem = None if slot.port else _arg_problem(VeStep(s.unit, s.op, slot.value, arg1=slot.value1))
                if problem:
                    return f"step {i} slot {k}: {problem}"
        return None

    @rule("VBR-4")
    def _stash(self, target: Any, ctx: VerifyContext | None) -> str | None:
        reads = [i for i, s in enumerate(self.steps) if s.stash or any(slot.port == 2 for slot in s.slots)]
        if any(s.stash not in (0, 1) or (s.stash and (s.slots or s.arg)) for s in self.steps):
            return "a stash read is `stash=1` with arg 0 and no slots"
        if self.stash_at < 0:
            return "a step reads the stash, but the pass writes none" if reads else None
        if self.stash_at > len(self.steps) or len(reads) > 1 or (reads and reads[0] < self.stash_at):
            return f"the stash written after step {self.stash_at} is read at most once, later: reads at {reads}"
        shapes = _shapes(self.input_type.dtype, self.steps)
        if reads and shapes is not None and shapes[self.stash_at] != shapes[reads[0]]:
            (ws, ww), (rs, rw) = shapes[self.stash_at], shapes[reads[0]]
            return f"the stash is written {ww}-way {ws} and read {rw}-way {rs}"
        return None


def _port_problem(slot: Slot, tensors: int) -> str | None:
    """What is wrong with a slot's `port` (0 an immediate, 1 VRF tensor `value`, 2 the stash)."""
    if slot.port not in (0, 1, 2):
        return f"port is 0 (an immediate), 1 (a VRF tensor) or 2 (the stash), not {slot.port}"
    if slot.port == 1 and not 0 <= slot.value < tensors:
        return "an rf slot's value is the index of a VRF tensor of the record"
    if slot.port == 2 and (slot.value != 0 or slot.mask == 8):
        return "a stash slot has value 0 and a guard on more than the group bit (bit 3) alone"
    return None


def _shapes(dtype: Any, steps: tuple[BranchStep, ...]) -> list[tuple[str, int]] | None:
    """(scalar, way) of the stream before each step and after the last (None: not typed):
    each step leaves the scalar and the way its unit declares (`ir.vector.units`)."""
    scalar, way = _SCALAR.get(dtype), 8
    out = [(scalar, way)]
    for s in steps:
        src, dst = UNITS[s.unit.name]
        scalar = s.op.name[len("TO_"):].lower() if dst == "op" else scalar if dst == "same" else dst
        way = spec_of(s.unit).way_out or way
        out.append((scalar, way))
    return out


@attrs.frozen(kw_only=True)
class VectorBranchRfOp(VectorBranchOp):
    """A tagged Vector Engine pass whose `_RF` steps read the VRF tensors `rf` (step arg: which)."""

    MNEMONIC: ClassVar[str] = "vector_branch_rf"
    PIPELINE_RANK: ClassVar[int] = 77

    rf: tuple[Ref, ...] = operand(name="rf")
    rf_read: tuple[RfRead, ...] = attrs.field(converter=tuple, metadata={"role": "attr", "name": None})

    def with_derived(self, rf_types: tuple[Any, ...] = ()) -> VectorBranchRfOp:
        """Also each tensor's `rf_read`: the walk of its element over the record's input stream
        (a tagged pass reads the VRF before any way change)."""
        rec = super().with_derived()
        first_reads([(i, k) for i, s in enumerate(rec.steps) if (k := _tensor_read(s)) is not None], len(self.rf))
        return attrs.evolve(rec, rf_read=tuple(walk(t.element, self.input_type) for t in rf_types))

    def derived(self, at: Derivation) -> VectorBranchRfOp:
        return self.with_derived(rf_types(self, at.types))

    def plain(self) -> VectorRfOp:
        """The same pass without its tag and slots, as a `vector_rf` record."""
        steps = [VeStep(VeUnit.TAG, VeOpName.ZERO, 0)]
        for s in self.steps:  # a step whose rf slot reads the VRF stands as its `_RF` form
            port = next((slot for slot in s.slots if slot.port), None)
            rf = spec_of(s.unit).rf_name
            if port is not None and rf is not None:
                steps.append(VeStep(VeUnit[rf], s.op, port.value))
            else:
                steps.append(VeStep(s.unit, s.op, s.arg, s.mode, s.arg1))
        return VectorRfOp(result=self.result, input=self.input, steps=tuple(steps), rf=self.rf, rf_read=self.rf_read,
                          input_type=self.input_type, output_type=self.output_type)


def _tensor_read(step: Any) -> int | None:
    """The VRF tensor a step reads: an `_RF` step's arg, or its rf slot's (`port=1`) value."""
    port = next((slot for slot in step.slots if slot.port == 1), None)
    if port is not None:
        return port.value
    return step.arg if is_rf(step.unit) else None
