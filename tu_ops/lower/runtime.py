"""Runtime scalars and guards lowered to their records (docs/runtime.md, `tu_ops.runtime`).

Each traced `to_spm`, `scalar`, `when` and `end_when` is one step of its own, placed at its
call like a DMA (`tu_ops.lower.program.layout`), so the programs and DMAs traced inside a
`ctx.when` block lie between its `guard_begin` and `guard_end` records.
"""

from __future__ import annotations

from typing import Any

from ir.runtime_ops import GuardBegin, GuardEnd, ScalarOp, ScalarLoad
from tu_ops.base import Ref
from tu_ops.runtime import GuardBeginOp, GuardEndOp, ScalarLoadOp, ScalarOpKind, ScalarRecord

__all__ = ["lower_runtime"]


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
    assert isinstance(op, GuardEnd), op
    return GuardEndOp(begin=Ref(refs[op.begin.id]), input_type=op.begin.type, **common)
