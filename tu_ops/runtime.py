"""Lowered records of runtime scalars and guards (docs/runtime.md), outside program blocks.

- `%5 = scalar_load src=%1 : scalar[u32] -> scalar[u32]`: one Tensor DMA command
  reading a scalar parameter into the scalar memory (SPM).
- `%6 = scalar op=GT lhs=%5 imm=0 : scalar[u32] -> scalar[bool]`: one sequencer scalar
  operation; `rhs=%k` names a second scalar, `imm=` a literal (exactly one for a binary
  op, none for `NOT` / `CAST`). The output type carries the result type.
- `%7 = guard_begin cond=%6 : scalar[bool] -> scalar[bool]` ... `%9 = guard_end begin=%7
  : scalar[bool] -> scalar[bool]`: the steps between run only when `cond` holds.
- `%7 = loop_begin start=0 stop=4 : scalar[usize] -> scalar[usize]` (or `bound=%5`, a runtime
  usize) ... `%12 = loop_end begin=%7 : scalar[usize] -> scalar[usize]`: the steps between run
  once per index value `%7` (docs/loops.md); both are regions (`ir.regions`).

Schedule model: a `scalar_load` costs one DMA command on the DMA context; the scalar and
guard records take no cycles on the sequencer; guarded steps are scheduled as if the
guard holds (the worst case, docs/runtime.md).

Lowering (`lower_runtime`): each traced `to_spm`, `scalar`, `when` and `end_when` is one step
of its own, placed at its call like a DMA (`tu_ops.lower.program.layout`), so the programs
and DMAs traced inside a `ctx.when` block lie between its `guard_begin` and `guard_end` records.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from ir.runtime_ops import GuardBegin, GuardEnd, LoopBegin, LoopEnd, ScalarLoad, ScalarOp
from ir.runtime_types import BINARY, COMPARE, LOGIC, OP_NAMES
from tu_ops.base import Ref, TuOp, VerifyContext, attr, operand, rule
from tu_ops.engines import DMA, SEQUENCER, Engine, Rate, no_counters, no_cycles
from ir.words import a_an

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["ScalarOpKind", "ScalarLoadOp", "ScalarRecord", "GuardBeginOp", "GuardEndOp", "LoopBeginOp", "LoopEndOp",
           "SEQUENCER", "lower_runtime"]

ScalarOpKind = enum.Enum("ScalarOpKind", {name: name for name in OP_NAMES})
ScalarOpKind.__doc__ = "The operation of a `scalar` record (`ir.runtime_types.apply`)."


class _Runtime(TuOp):
    IN_PROGRAM: ClassVar[bool] = False
    IN_KINDS: ClassVar[tuple[str, ...]] = ("scalar",)
    OUT_KINDS: ClassVar[tuple[str, ...]] = ("scalar",)
    ENGINE: ClassVar[Engine] = SEQUENCER
    RUNTIME: ClassVar[bool] = True
    busy_cycles = no_cycles
    cost_counters = no_counters


@attrs.frozen(kw_only=True)
class ScalarLoadOp(_Runtime):
    """A scalar parameter read into the scalar memory."""

    MNEMONIC: ClassVar[str] = "scalar_load"
    PIPELINE_RANK: ClassVar[int] = 200
    TRACED_STAGE: ClassVar[str | None] = "scalar_load"
    ENGINE: ClassVar[Engine] = DMA

    src: Ref = operand()

    def busy_cycles(self, rate: Rate, target: Target) -> int:
        """One DMA command moving 8 bytes: its fixed startup and one cycle."""
        return int(rate("dma", "startup_cycles")) + 1

    def cost_counters(self, target: Target) -> dict[str, int]:
        return {"dma_commands": 1, "dma_bytes": 8}

    @rule("RUNTIME-8")
    def _same_type(self, target: Target, ctx: VerifyContext | None) -> str | None:
        return None if self.input_type == self.output_type else "a scalar_load keeps its scalar's type"


@attrs.frozen(kw_only=True)
class ScalarRecord(_Runtime):
    """One scalar operation of the sequencer."""

    MNEMONIC: ClassVar[str] = "scalar"
    PIPELINE_RANK: ClassVar[int] = 201
    TRACED_STAGE: ClassVar[str | None] = "scalar"

    op: ScalarOpKind = attr()
    lhs: Ref = operand()
    rhs: Ref | None = operand(optional=True)
    imm: int | None = attr(None, optional=True)

    @rule("RUNTIME-8")
    def _typed(self, target: Target, ctx: VerifyContext | None) -> str | None:
        name, src, out = self.op.name, self.input_type.dtype, self.output_type.dtype
        binary = name in BINARY or name in COMPARE or name in LOGIC
        if binary and (self.rhs is None) == (self.imm is None):
            return f"the {name} op takes exactly one of rhs= and imm="
        if not binary and (self.rhs is not None or self.imm is not None):
            return f"the {name} op takes no rhs= or imm="
        if self.imm is not None and not src.min <= self.imm <= src.max:
            return f"imm={self.imm} is not {a_an(src)} value"
        if ctx is not None and self.rhs is not None:
            other = ctx.op(self.rhs)
            if other is not None and other.output_type != self.input_type:
                return f"rhs {self.rhs} is {other.output_type}, not the lhs type {self.input_type}"
        if name in COMPARE and out.name != "bool":
            return f"a comparison gives bool, not {out}"
        if name == "CAST" and out.name == "bool":
            return "a cast gives an integer type"
        if name not in COMPARE and name != "CAST" and out != src:
            return f"the {name} op keeps its operand type {src}, not {out}"
        if name in BINARY and src.name == "bool":
            return f"{name} on bool"
        return None


@attrs.frozen(kw_only=True)
class GuardBeginOp(_Runtime):
    """Opens a runtime guard on the bool `cond`."""

    MNEMONIC: ClassVar[str] = "guard_begin"
    PIPELINE_RANK: ClassVar[int] = 202
    TRACED_STAGE: ClassVar[str | None] = "when"
    REGION: ClassVar[str] = "guard"   # opens a region (ir.regions)

    cond: Ref = operand()

    @rule("RUNTIME-8")
    def _bool(self, target: Target, ctx: VerifyContext | None) -> str | None:
        if self.input_type.dtype.name != "bool" or self.output_type != self.input_type:
            return "a guard_begin reads a scalar[bool] and gives its token, a scalar[bool]"
        return None


@attrs.frozen(kw_only=True)
class GuardEndOp(_Runtime):
    """Closes the guard `begin` opened."""

    MNEMONIC: ClassVar[str] = "guard_end"
    PIPELINE_RANK: ClassVar[int] = 203
    TRACED_STAGE: ClassVar[str | None] = "end_when"
    REGION_END: ClassVar[bool] = True

    begin: Ref = operand()

    @rule("RUNTIME-8")
    def _pairs(self, target: Target, ctx: VerifyContext | None) -> str | None:
        if self.input_type.dtype.name != "bool" or self.output_type != self.input_type:
            return "a guard_end reads its guard_begin's token and gives a scalar[bool]"
        if ctx is not None and self.neighbour(ctx, self.begin, "guard_begin") is None:
            return f"begin {self.begin} is not the result of a guard_begin"
        return None


@attrs.frozen(kw_only=True)
class LoopBeginOp(_Runtime):
    """Opens a rolled loop (docs/loops.md): the steps up to the matching `loop_end` run once
    for each index from `start` below `stop`, or below the runtime usize `bound`; the
    result is the index."""

    MNEMONIC: ClassVar[str] = "loop_begin"
    PIPELINE_RANK: ClassVar[int] = 204
    TRACED_STAGE: ClassVar[str | None] = "loop"
    REGION: ClassVar[str] = "loop"

    bound: Ref | None = operand(optional=True)
    start: int = attr()
    stop: int | None = attr(None, optional=True)

    @rule("LOOP-5")
    def _bounds(self, target: Target, ctx: VerifyContext | None) -> str | None:
        if self.output_type.dtype.name != "usize" or self.input_type != self.output_type:
            return "a loop_begin gives its index, a scalar[usize]"
        if (self.bound is None) == (self.stop is None):
            return "a loop_begin takes exactly one of stop= and bound="
        if self.start < 0 or (self.stop is not None and self.stop <= self.start):
            return f"a loop from {self.start} to {self.stop} has no iteration"
        return None


@attrs.frozen(kw_only=True)
class LoopEndOp(_Runtime):
    """Closes the loop `begin` opened; its result is the index past the last iteration."""

    MNEMONIC: ClassVar[str] = "loop_end"
    PIPELINE_RANK: ClassVar[int] = 205
    TRACED_STAGE: ClassVar[str | None] = "end_loop"
    REGION_END: ClassVar[bool] = True

    begin: Ref = operand()

    @rule("LOOP-5")
    def _pairs(self, target: Target, ctx: VerifyContext | None) -> str | None:
        if self.output_type.dtype.name != "usize" or self.input_type != self.output_type:
            return "a loop_end reads its loop_begin's index and gives a scalar[usize]"
        if ctx is not None and self.neighbour(ctx, self.begin, "loop_begin") is None:
            return f"begin {self.begin} is not the result of a loop_begin"
        return None


def lower_runtime(op: Any, result: int, refs: dict[int, int]) -> Any:
    """The record of one runtime step; `refs` maps traced value ids to lowered ones."""
    out = op.result.type
    common = {"result": Ref(result), "output_type": out, "loc": op.loc}
    if isinstance(op, ScalarLoad):
        return ScalarLoadOp(src=Ref(refs[op.src.id]), input_type=op.src.type, **common)
    if isinstance(op, ScalarOp):
        rhs = Ref(refs[op.rhs.id]) if op.rhs is not None else None
        return ScalarRecord(op=ScalarOpKind[op.op], lhs=Ref(refs[op.lhs.id]), rhs=rhs, imm=op.imm,
                            input_type=op.lhs.type, **common)
    if isinstance(op, GuardBegin):
        return GuardBeginOp(cond=Ref(refs[op.cond.id]), input_type=op.cond.type, **common)
    if isinstance(op, LoopBegin):
        bound = Ref(refs[op.bound.id]) if op.bound is not None else None
        return LoopBeginOp(bound=bound, start=op.start, stop=op.stop, input_type=out, **common)
    if isinstance(op, LoopEnd):
        return LoopEndOp(begin=Ref(refs[op.begin.id]), input_type=out, **common)
    assert isinstance(op, GuardEnd), op
    return GuardEndOp(begin=Ref(refs[op.begin.id]), input_type=op.begin.type, **common)
