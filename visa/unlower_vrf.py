"""The inverse of the VRF lowering (`tu_ops.lower.vrf`): the traced ops a `vrf_load` and a
`vector_rf` record stand for, declared with `visa.unlower.retraces`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from ir import ops as ir
from ir.vrf_ops import ToVrf
from tu_ops.lower.vector import traced_pass
from ir.vector.units import is_rf, spec_of
from tu_ops.vector import VeUnit
from visa.unlower import Underivable, retraces

__all__: list[str] = []


@retraces("vrf_load")
def _vrf_load(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    out = rec.output_type
    return (ToVrf(input=src, element=out.element, result=ir.Value(rec.result.id, out), loc=rec.loc),)


@retraces("vector_rf")
def _vector_rf(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    """The constant form of the pass, then each `_RF` step's op reads the VRF value."""
    values = []
    for ref in rec.rf:
        vrf_t = types.get(ref.id)
        if getattr(vrf_t, "kind", None) != "vrf":
            raise Underivable(rec, f"rf {ref} is not a VRF tensor")
        values.append(ir.Value(ref.id, vrf_t))
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
