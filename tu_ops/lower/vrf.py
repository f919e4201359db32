"""`to_vrf` lowered to a `vrf_load`, a pass reading a VRF tensor to a `vector_rf` record, and
the VRF allocation.

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

from ir.vector.ways import FLIT
from ir.vrf_ops import ToVrf
from tu_ops.base import Ref
from tu_ops.lower.dispatch import Site, lowers
from tu_ops.lower.errors import LoweringRefusal, refusal, stage_of
from tu_ops.program import TuProgram
from tu_ops.rf_reshape import rf_aliases
from tu_ops.vrf import VRF_WORDS, VectorRfOp, VrfLoad, vrf_words, walk

__all__ = ["rf_pass", "allocate_vrf", "vrf_placement"]


@lowers(ToVrf, into=VrfLoad)
def _to_vrf(op: ToVrf, site: Site) -> VrfLoad:
    return VrfLoad.of_types(Ref(site.result), Ref(site.src), site.type_of(op.input), site.type_of(op.result), op.loc)


def rf_pass(rec: Any, body: Any, site: Site) -> Any:
    """The `vector` record `rec` of the traced pass `body`, as a `vector_rf` when some op
    reads a VRF tensor: each `_RF` step's arg is the index of the tensor it reads."""
    tensors: list[Any] = []
    for o in body:
        for v in getattr(o, "rf", ()):
            if all(v.id != t.id for t in tensors):
                tensors.append(v)
    if not tensors:
        return rec
    ids = [t.id for t in tensors]
    configured = [o for o in body if o.step() is not None]
    steps = tuple(attrs.evolve(s, arg=ids.index(o.rf[0].id)) if getattr(o, "rf", ()) else s
                  for s, o in zip(rec.steps, configured))
    fields = {f.name: getattr(rec, f.name) for f in attrs.fields(type(rec))}
    fields["steps"] = steps
    return VectorRfOp(**fields, rf=tuple(Ref(site.ref(t)) for t in tensors),
                      rf_read=tuple(walk(t.type.element, _read_stream(rec.input_type, t, body)) for t in tensors))


def _read_stream(record_input: Any, tensor: Any, body: Any) -> Any:
    """The stream whose cells read VRF tensor `tensor`: the record's input, or, after a way
    change that moved time (a split), the reading op's stream padded back to a flit."""
    stream = next(o.input.type for o in body if any(v.id == tensor.id for v in getattr(o, "rf", ())))
    if stream.time.equivalent(record_input.time):
        return record_input
    return attrs.evolve(record_input, time=stream.time, packet=stream.packet.pad(FLIT).normalize())


# --- allocation ---------------------------------------------------------------------------------


def _liveness(kernel: Any) -> dict[int, list]:
    """VRF tensor id -> [load, first step, last step]."""
    live: dict[int, list] = {}
    root = rf_aliases(kernel.ops())  # a relabel's result -> the tensor it names
    for step, s in enumerate(kernel.steps):
        for op in (s.ops if isinstance(s, TuProgram) else (s,)):
            if vrf_words(op) is not None:  # a vrf_load, or a VRF tensor made by new()
                live[op.result.id] = [op, step, step]
            elif hasattr(op, "rf_read"):  # a pass that reads the VRF (vector_rf, vector_branch_rf, ...)
                for ref in op.rf:
                    r = root.get(ref.id, ref.id)
                    if r in live:
                        live[r][2] = max(live[r][2], step)
    return live


def _place(ref: int, live: dict[int, list], base: dict[int, int]) -> int:
    load, first, _ = live[ref]
    words = vrf_words(load)
    busy = [(base[o], base[o] + vrf_words(live[o][0])) for o in base if live[o][1] <= first <= live[o][2]]
    for start in sorted({0, *(b for _, b in busy)}):
        if start + words <= VRF_WORDS and all(start + words <= a or b <= start for a, b in busy):
            return start
    held = sum(b - a for a, b in busy)
    raise LoweringRefusal([refusal(
        "VRF-6", f"VRF over-subscribed: {words * 4} bytes requested, {held * 4} of {VRF_WORDS * 4} bytes "
                 "per slice held by live VRF tensors", load.loc, stage=stage_of(load), op=load.text(),
        label=f"needs {words * 4} bytes of VRF in each slice",
        help="finish the passes that read an earlier VRF tensor before storing this one, or store less")])


def vrf_placement(kernel: Any) -> dict[int, int]:
    """The `base` word of every `vrf_load` and VRF `tensor_new` (by result id) the allocation
    gives (VRF-6 when one does not fit); a `tensor_new` has no field for it."""
    live = _liveness(kernel)
    base: dict[int, int] = {}
    for ref in sorted(live, key=lambda r: (live[r][1], r)):
        base[ref] = _place(ref, live, base)
    return base


def allocate_vrf(kernel: Any) -> Any:
    """Fill every `vrf_load`'s `base` (refusing VRF-6)."""
    base = vrf_placement(kernel)
    if not base:
        return kernel
    steps = []
    for s in kernel.steps:
        if isinstance(s, TuProgram):
            s = attrs.evolve(s, ops=[attrs.evolve(op, base=base[op.result.id]) if op.MNEMONIC == "vrf_load" else op
                                     for op in s.ops])
        steps.append(s)
    return attrs.evolve(kernel, steps=steps)
