"""The inverse of a pair-mode pass that reads the VRF (`vector_pair_rf`), declared with
`visa.unlower.retraces`: the constant form of the pass (`traced_pair`), then each group a
step's `rf` names reads its VRF tensor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from ir.vector.operands import VrfOperand
from tu_ops.lower.vector_pair import traced_pair
from visa.unlower_table import Underivable, retraces
from visa.unlower_branch_rf import rf_values

__all__: list[str] = []


@retraces("vector_pair_rf")
def _vector_pair_rf(rec: Any, src: Any, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    values = rf_values(rec, types)
    plain = attrs.evolve(rec, steps=tuple(attrs.evolve(s, rf=0, arg0=0 if s.rf & 1 else s.arg0,
                                                       arg1=0 if s.rf & 2 else s.arg1) for s in rec.steps))
    ops = list(traced_pair(plain, src, fresh))
    for k, s in enumerate(rec.steps):
        if not s.rf:
            continue
        args = {a for g, a in enumerate((s.arg0, s.arg1)) if s.rf >> g & 1}
        if len(args) != 1 or not 0 <= min(args) < len(values):
            raise Underivable(rec, "a paired step reads a VRF tensor the record does not name")
        op, v = ops[k + 2], values[min(args)]
        scalar = "f32" if op.input.type.dtype.name == "F32" else "i32"
        operand = VrfOperand(v, scalar)
        ops[k + 2] = attrs.evolve(op, rf=(v,), c0=operand if s.rf & 1 else op.c0, c1=operand if s.rf & 2 else op.c1)
    return tuple(ops)
