"""Traced ops of runtime scalars and runtime guards (docs/runtime.md).

- `to_spm %p`: the launch value of an `HbmScalar` parameter read into the scalar memory.
- `scalar %a[, %b] op=... imm=...`: one node of a scalar expression (wrapping integer
  arithmetic, comparisons, logic, casts; `ir.runtime_types.apply`). A literal operand is
  the `imm` attribute, so the expression tree of the DSL is a chain of these ops.
- `when %c` ... `end_when %g`: the ops between are done only when `%c` holds at run
  time. Their results are the guard token (a `bool`), which pairs the two.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.op_frame import attr, operand
from ir.ops import Op, Value
from ir.runtime_types import SCALAR_DTYPES, ScalarDType, ScalarType

__all__ = ["ScalarLoad", "ScalarOp", "GuardBegin", "GuardEnd", "RUNTIME_STEPS", "BOOL"]

BOOL = ScalarType(SCALAR_DTYPES["bool"])


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
    cond: Value = operand()

    def infer_type(self) -> ScalarType:
        return BOOL


@attrs.frozen(kw_only=True)
class GuardEnd(Op):
    """The end of the guard `begin` opened."""

    STAGE = "end_when"
    begin: Value = operand()

    def infer_type(self) -> ScalarType:
        return BOOL


RUNTIME_STEPS: tuple[type[Any], ...] = (ScalarLoad, ScalarOp, GuardBegin, GuardEnd)
"""The runtime ops the lowering places as steps of their own, in program order."""
