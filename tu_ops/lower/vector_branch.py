"""A tagged pass lowered: `vector_init`, `vector_intra_slice_tag(mode)`, ..., `vector_final`
become one `vector_branch` record (`tu_ops.lower.vector` hands the pass here, see
`tu_ops.lower.vector_kind`).
Its derived fields are the record's own declaration (`VectorBranchOp.with_derived`).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.vector import ops as vops
from ir.vector import branch_ops as bops
from ir.vector import stash_ops as sops
from ir.vector.branch_ops import tag_codes
from tu_ops.base import Ref
from tu_ops.lower.tables import Site, lowers
from tu_ops.lower.vrf import derived_pass, vrf_tensors
from tu_ops.vector import VeMode, VeOpName, VeUnit
from tu_ops.vector_branch import BranchStep, CmpName, Slot, TagCmp, VectorBranchOp, VectorBranchRfOp

__all__ = ["lower_branch"]


def _step(op: Any) -> BranchStep | None:
    if isinstance(op, (vops.VectorFinal, sops.VectorStash)):
        return None
    if isinstance(op, sops.STASH_READS):
        return BranchStep(VeUnit[op.unit()], VeOpName[op.op_name()], 0, (), 1, mode=VeMode[op.mode_name()],
                          arg1=op.arg1())
    if isinstance(op, bops.BRANCH_OP_CLASSES):
        slots = tuple(Slot(*s[:4], value1=(*s[4:], 0)[0]) for s in op.slots())  # FMA_F's slots carry their c
        if op.port() is not None:  # the rf slot (port=2: the stash); a tensor's index is set below
            slots += (Slot(*op.port(), 0, port=2 if op.port_reads_stash() else 1, value1=op.port_arg1()),)
        return BranchStep(VeUnit[op.unit()], VeOpName[op.op_name()], 0, slots, mode=VeMode[op.mode_name()])
    unit, name, arg, *rest = op.step()
    mode, arg1 = rest or ("DEFAULT", 0)
    return BranchStep(VeUnit[unit], VeOpName[name], arg, (), mode=VeMode[mode], arg1=arg1)


def lower_branch(op: vops.VectorInit, site: Site, body: tuple[Any, ...]) -> VectorBranchOp:
    """The `vector_branch` record of the pass entered at `op` (`body[0]` is its tag)."""
    tag = tuple(TagCmp(CmpName[n], b) for n, b in tag_codes(body[0].mode))
    steps, stash_at = [], -1
    for o in body[1:]:
        stash_at = len(steps) if isinstance(o, sops.VectorStash) else stash_at
        steps.append(_step(o))
    steps = [s for s in steps if s is not None]
    fields = dict(result=Ref(site.result), input=Ref(site.src), tag=tag, steps=steps, stash_at=stash_at,
                  input_type=site.type_of(op.input), output_type=site.type_of(body[-1].result), loc=op.loc)
    tensors = vrf_tensors(body)
    if not tensors:
        return derived_pass(VectorBranchOp(**fields))

    ids = [t.id for t in tensors]
    readers = iter([o for o in body[1:] if _step(o) is not None])
    fields["steps"] = [_read_from(s, ids.index(o.rf[0].id)) if getattr(o, "rf", ()) else s
                       for s, o in zip(steps, readers)]
    return derived_pass(VectorBranchRfOp(**fields, rf=tuple(Ref(site.ref(t)) for t in tensors), rf_read=()), tensors)


def _read_from(step: BranchStep, index: int) -> BranchStep:
    """The step reading VRF tensor `index`: an `_RF` step's arg, or its rf slot's value."""
    if any(s.port for s in step.slots):
        return attrs.evolve(step, slots=tuple(attrs.evolve(s, value=index) if s.port else s for s in step.slots))
    return attrs.evolve(step, arg=index)


for _cls in (*bops.BRANCH_OP_CLASSES, *sops.STASH_OP_CLASSES):
    lowers(_cls)(lambda op, site: None)
