"""`to_vrf` lowered to a `vrf_load`, and a pass reading a VRF tensor to a `vector_rf` record
(the VRF allocation is tu_ops/lower/vrf_alloc.py's); every pass record's derived fields
(`derived_pass`).

A VRF tensor occupies `size(element)` words of every slice's VRF, word `i` holding cell
`i` of its element mapping; the load's `write` and the pass's `rf_read` are the sequencer
walks (`ir.mapping.sequence`) from the stream's `[time, packet]` to those words. The
allocation gives each tensor the lowest word at which it overlaps no VRF tensor live at
its step (live from its load, or its `tensor_new`, through the last pass reading it or a
relabel of it, `rf_reshape`); one
that does not fit is VRF-6.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.errors import InternalError
from ir.vrf_ops import ToVrf
from tu_ops.base import Ref
from tu_ops.lower.tables import Site, lowers
from tu_ops.lower.vrf_alloc import allocate_vrf, vrf_placement  # re-exported: the VRF allocation
from tu_ops.vrf import VectorRfOp, VrfLoad

__all__ = ["rf_pass", "vrf_tensors", "derived_pass", "allocate_vrf", "vrf_placement"]


@lowers(ToVrf, into=VrfLoad)
def _to_vrf(op: ToVrf, site: Site) -> VrfLoad:
    return VrfLoad.of_types(Ref(site.result), Ref(site.src), site.type_of(op.input), site.type_of(op.result), op.loc)


def derived_pass(rec: Any, tensors: Any = ()) -> Any:
    """`rec`, a Vector Engine pass record the lowering built from its traced ops' choices, with
    its derived fields filled by its own declaration (`with_derived`: each reduce step's `vcg=`,
    each VRF tensor's `rf_read`, as the VISA verifier derives them); `tensors` are the traced
    VRF values its `rf` names."""
    try:
        return rec.with_derived(tuple(t.type for t in tensors))
    except ValueError as e:  # a padded reduce axis the Valid Count Generator cannot count
        raise InternalError(f"{rec.MNEMONIC} {rec.result}: {e}") from e


def vrf_tensors(body: tuple[Any, ...]) -> list[Any]:
    """The VRF tensors the pass's ops read, in first-read order."""
    tensors: list[Any] = []
    for o in body:
        for v in getattr(o, "rf", ()) or ():
            if all(v.id != t.id for t in tensors):
                tensors.append(v)
    return tensors


def rf_pass(rec: Any, body: Any, site: Site) -> Any:
    """The `vector` record `rec` of the traced pass `body`, as a `vector_rf` when some op
    reads a VRF tensor: each `_RF` step's arg is the index of the tensor it reads; its derived
    fields filled by its declaration (`derived_pass`)."""
    tensors = vrf_tensors(body)
    if not tensors:
        return derived_pass(rec)
    ids = [t.id for t in tensors]
    configured = [o for o in body if o.step() is not None]
    steps = tuple(attrs.evolve(s, arg=ids.index(o.rf[0].id)) if getattr(o, "rf", ()) else s
                  for s, o in zip(rec.steps, configured))
    fields = {f.name: getattr(rec, f.name) for f in attrs.fields(type(rec))}
    fields["steps"] = steps
    rec = VectorRfOp(**fields, rf=tuple(Ref(site.ref(t)) for t in tensors), rf_read=())
    return derived_pass(rec, tensors)  # its rf_read walks: the record's declaration (`VectorRfOp.with_derived`)
