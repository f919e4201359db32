"""Traced ops of runtime scalars and runtime guards (docs/runtime.md).

- `to_spm %p`: the launch value of an `HbmScalar` parameter read into the scalar memory.
- `scalar %a[, %b] op=... imm=...`: one node of a scalar expression (wrapping integer
  arithmetic, comparisons, logic, casts; `ir.runtime_types.apply`). A literal operand is
  the `imm` attribute, so the expression tree of the DSL is a chain of these ops.
- `when %c` ... `end_when %g`: the ops between are done only when `%c` holds at run
  time. Their results are the guard token (a `bool`), which pairs the two.
- `loop start=a stop=b` (or `loop %n start=a`, a runtime bound) ... `end_loop %i`: the ops
  between are one iteration's body, done for the index `%i` (the loop's result, a `usize`)
  = a, a + 1, ... below the bound (docs/loops.md).

A guard and a loop are the two kinds of region (`ir.regions`): a bracket of ops.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.op_frame import attr, operand
from ir.ops import Op, Value
from ir.runtime_types import SCALAR_DTYPES, ScalarDType, ScalarType

__all__ = ["ScalarLoad", "ScalarOp", "GuardBegin", "GuardEnd", "LoopBegin", "LoopEnd", "RUNTIME_STEPS", "BOOL",
           "USIZE"]

BOOL = ScalarType(SCALAR_DTYPES["bool"])
USIZE = ScalarType(SCALAR_DTYPES["usize"])


@attrs.frozen(kw_only=True)
class ScalarLoad(Op):
    """`s.to_spm(ctx.tdma)`: the scalar parameter `src` read into the scalar memory."""

    STAGE = "scalar_load"  # the IR name of `s.to_spm(ctx.tdma)` (a DM tensor's `to_spm` is `ir.spm_ops.ToSpm`)
    SAME_TYPE_AS = "src"
    src: Value = operand()


@attrs.frozen(kw_only=True)
class ScalarOp(Op):
    """One scalar operation `op` on `lhs` and `rhs` (or the literal `imm`); its result type
    is `scalar<dtype>`."""

    STAGE = "scalar"
    lhs: Value = operand()
    rhs: Value | None = operand(optional=True)
    op: str = attr()
    imm: int | None = attr(None, optional=True)
    dtype: ScalarDType = attr()

    def infer_type(self) -> ScalarType:
        return ScalarType(self.dtype)


@attrs.frozen(kw_only=True)
class GuardBegin(Op):
    """`with ctx.when(cond):`: the ops up to the matching `end_when` run only when `cond` holds."""

    STAGE = "when"
    REGION: ClassVar[str] = "guard"   # opens a region (ir.regions)
    cond: Value = operand()

    def infer_type(self) -> ScalarType:
        return BOOL


@attrs.frozen(kw_only=True)
class GuardEnd(Op):
    """The end of the guard `begin` opened."""

    STAGE = "end_when"
    REGION_END: ClassVar[bool] = True  # closes the region `begin` opened
    begin: Value = operand()

    def infer_type(self) -> ScalarType:
        return BOOL


@attrs.frozen(kw_only=True)
class LoopBegin(Op):
    """`for i in ctx.loop(...)`: the ops up to the matching `end_loop` are the body, done
    once for each index from `start` below `stop` (a trace-time bound) or below the runtime
    `usize` scalar `bound`. The result is the index."""

    STAGE = "loop"
    REGION: ClassVar[str] = "loop"
    bound: Value | None = operand(optional=True)
    start: int = attr()
    stop: int | None = attr(None, optional=True)

    def infer_type(self) -> ScalarType:
        return USIZE


@attrs.frozen(kw_only=True)
class LoopEnd(Op):
    """The end of the loop body `begin` opened; its result is the index past the last."""

    STAGE = "end_loop"
    REGION_END: ClassVar[bool] = True
    begin: Value = operand()

    def infer_type(self) -> ScalarType:
        return USIZE


RUNTIME_STEPS: tuple[type[Any], ...] = (ScalarLoad, ScalarOp, GuardBegin, GuardEnd, LoopBegin, LoopEnd)
"""The runtime ops the lowering places as steps of their own, in program order."""
