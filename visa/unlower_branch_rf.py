"""The inverse of a tagged pass that reads the VRF (`vector_branch_rf`), declared with
`visa.unlower.retraces`: the constant form of the pass (`traced_branch`), then each `_RF`
step's op, and each op whose layout ends in a register-file slot, reads its VRF tensor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from ir import ops as ir
from ir.vector import ops as vops
from ir.vector import stash_ops as sops
from ir.vector.units import is_rf, spec_of
from tu_ops.lower.vector_branch import traced_branch
from tu_ops.vector import VeUnit
from visa.unlower_table import Underivable, retraces

__all__ = ["rf_values"]

_FRAME = (vops.VectorInit, vops.VectorTag, vops.VectorFinal, sops.VectorStash)


def rf_values(rec: Any, types: dict[int, Any]) -> list[ir.Value]:
    """The VRF tensors `rec.rf` names, as traced values (Underivable when one is not a VRF tensor)."""
    values = []
    for ref in rec.rf:
        vrf_t = types.get(ref.id)
        if getattr(vrf_t, "kind", None) != "vrf":
            raise Underivable(rec, f"rf {ref} is not a VRF tensor")
        values.append(ir.Value(ref.id, vrf_t))
    return values


@retraces("vector_branch_rf")
def _vector_branch_rf(rec: Any, src: ir.Value, types: dict[int, Any], target: Any, fresh: Iterator[int]):
    values = rf_values(rec, types)
    reads = [is_rf(s.unit) for s in rec.steps]
    if any(r and (s.slots or s.stash or not 0 <= s.arg < len(values)) for s, r in zip(rec.steps, reads)):
        raise Underivable(rec, "a register-file step reads a VRF tensor the record does not name")
    ports = [next((slot.value for slot in s.slots if slot.port == 1), None) for s in rec.steps]  # 2: the stash
    if any(p is not None and not 0 <= p < len(values) for p in ports):
        raise Underivable(rec, "a register-file slot reads a VRF tensor the record does not name")
    plain = attrs.evolve(rec, steps=tuple(attrs.evolve(s, unit=VeUnit[spec_of(s.unit).name], arg=0) if r else s
                                          for s, r in zip(rec.steps, reads)))
    ops = list(traced_branch(plain, src, fresh))
    at = [i for i, o in enumerate(ops) if not isinstance(o, _FRAME)]
    for k, (s, r) in enumerate(zip(rec.steps, reads)):
        if r:
            ops[at[k]] = attrs.evolve(ops[at[k]], rf=(values[s.arg],), const=0)
        elif ports[k] is not None:
            ops[at[k]] = attrs.evolve(ops[at[k]], rf=(values[ports[k]],))
    return tuple(ops)
