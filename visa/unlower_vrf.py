"""The inverse of the VRF lowering (`tu_ops.lower.vrf`): the traced ops a `vector_rf` record
stands for, declared with `visa.unlower_table.retraces`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from ir import ops as ir
from tu_ops.lower.vector import traced_pass
from ir.vector.units import is_rf, spec_of
from tu_ops.vector import VeUnit
from visa.unlower_table import Underivable, retraces
from visa.unlower_branch_rf import rf_values

__all__: list[str] = []


@retraces("vector_rf")
def _vector_rf(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    """The constant form of the pass, then each `_RF` step's op reads the VRF value."""
    values = rf_values(rec, types)
    reads = [is_rf(s.unit) for s in rec.steps]
    if any(r and not 0 <= s.arg < len(values) for s, r in zip(rec.steps, reads)):
        raise Underivable(rec, "a register-file step reads a VRF tensor the record does not name")
    plain = attrs.evolve(rec, steps=tuple(attrs.evolve(s, unit=VeUnit[spec_of(s.unit).name], arg=0) if r else s
                                          for s, r in zip(rec.steps, reads)))
    ops = list(traced_pass(plain, src, fresh))
    for i, (s, r) in enumerate(zip(rec.steps, reads)):
        if r:
            ops[i + 1] = attrs.evolve(ops[i + 1], rf=(values[s.arg],), const=0)
    return tuple(ops)
