"""A pair-mode pass lowered: `vector_init`, `vector_intra_slice_unzip`, ..., `vector_final`
become one `vector_pair` record, made at `vector_init` (`tu_ops.lower.vector` hands the pass
here when it starts with the unzip).
Its derived fields are the record's own declaration (`VectorPairOp.with_derived`).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.errors import InternalError
from ir.vector import ops as vops
from ir.vector import pair_logic_ops as plogic
from ir.vector import pair_ops as pops
from ir.vector import pair_ternary_ops as ptern
from tu_ops.base import Ref
from tu_ops.lower.tables import Site, lowers
from tu_ops.lower.vrf import derived_pass, vrf_tensors
from tu_ops.vector import VeMode, VeOpName
from tu_ops.vector_pair import PairSide, PairStep, PairUnit, VectorPairOp, VectorPairRfOp

__all__ = ["lower_pair"]


def _step(op: Any) -> PairStep | None:
    if isinstance(op, pops.VectorUnzip) or isinstance(op, vops.VectorFinal):
        return None
    if hasattr(op, "pair_step"):
        unit, name, side, a0, a1 = op.pair_step()
        mode = op.step_mode() if hasattr(op, "step_mode") else "DEFAULT"
    else:
        unit, name, a0, *rest = op.step()
        side, mode, a1 = "MERGED", *(rest or ("DEFAULT", 0))
    if unit not in PairUnit.__members__:
        raise InternalError(f"a pair pass has no {unit} step (`{op.STAGE}`)")
    add0, add1 = op.addends() if hasattr(op, "addends") else (0, 0)  # a paired FMA_F's c per group
    return PairStep(PairUnit[unit], VeOpName[name], PairSide[side], a0, a1, VeMode[mode], add0=add0, add1=add1)


def lower_pair(op: vops.VectorInit, site: Site, body: tuple[Any, ...]) -> VectorPairOp:
    """The `vector_pair` record of the pass entered at `op` (`body[0]` is its unzip); a
    `vector_pair_rf` when a group reads a VRF tensor."""
    unzip = body[0]
    tensors = vrf_tensors(body)
    ids = [t.id for t in tensors]
    steps = tuple(_reading(s, o, ids) for o in body if (s := _step(o)) is not None)
    fields = dict(result=Ref(site.result), input=Ref(site.src), axis=unzip.axis, split_time=unzip.split_time,
                  steps=steps, input_type=site.type_of(op.input), output_type=site.type_of(body[-1].result), loc=op.loc)
    if not tensors:
        return derived_pass(VectorPairOp(**fields))
    return derived_pass(VectorPairRfOp(**fields, rf=tuple(Ref(site.ref(t)) for t in tensors), rf_read=()), tensors)


def _reading(step: PairStep, op: Any, ids: list[int]) -> PairStep:
    """The step with its VRF groups marked (`rf` bits) and their args the tensor's index."""
    groups = op.rf_groups() if hasattr(op, "rf_groups") else 0
    if not groups:
        return step
    k = ids.index(op.rf[0].id)
    return attrs.evolve(step, rf=groups, arg0=k if groups & 1 else step.arg0, arg1=k if groups & 2 else step.arg1)


for _cls in (*pops.PAIR_OP_CLASSES, *plogic.PAIR_LOGIC_CLASSES, *ptern.PAIR_TERNARY_CLASSES):
    lowers(_cls)(lambda op, site: None)
