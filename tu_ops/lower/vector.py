"""`vector_init ... vector_final` lowered: one `vector` record, made at `vector_init`.

Each traced op between them configures one step (`op.step()`); the other stages of the
pass fold into the record; its derived fields are the record's own declaration
(`VectorEngineOp.with_derived`, which the VISA verifier compares a parsed record with).
"""

from __future__ import annotations

from typing import Any

from ir.vector import chain_ops as cops
from ir.vector import ops as vops
from ir.errors import InternalError
from ir.vector.inter_ops import VectorInterSliceReduce
from ir.vector.unit_ops import unit_op_classes
from ir.vector.reduce_ops import VectorIntraSliceReduce
from tu_ops.base import Ref
from tu_ops.lower.tables import Site, lowers
from tu_ops.lower.vector_branch import lower_branch
from tu_ops.lower.vector_kind import record_kind
from tu_ops.lower.vector_pair import lower_pair
from tu_ops.lower.vrf import rf_pass
from tu_ops.vector import VectorEngineOp, VeMode, VeOpName, VeStep, VeUnit

__all__ = ["lower_vector", "lower_pass"]


def ve_step(unit: str, name: str, arg: int, mode: str = "DEFAULT", arg1: int = 0) -> VeStep:
    """The record's step for a traced op's `step()`."""
    return VeStep(VeUnit[unit], VeOpName[name], arg, VeMode[mode], arg1)


def _pass_ops(site: Site) -> tuple[Any, ...]:
    """The traced ops after `vector_init` up to and including its `vector_final` (up to,
    not including, an inter-slice reduce: that is a record of its own, `tu_ops.lower.vector_inter`)."""
    rest = site.chain.after_collect()[site.position + 1:]
    end = next((i for i, op in enumerate(rest) if isinstance(op, (vops.VectorFinal, VectorInterSliceReduce))), None)
    if end is None:
        raise InternalError("a `vector_init` without its `vector_final`")
    return rest[:end + 1] if isinstance(rest[end], vops.VectorFinal) else rest[:end]


@lowers(vops.VectorInit, into=record_kind)
def lower_vector(op: vops.VectorInit, site: Site) -> VectorEngineOp | None:
    """The `vector` record of the pass entered at `op` (`vector_rf` when it reads the VRF);
    None when the pass starts with an inter-slice reduce (the InterFirst order)."""
    body = _pass_ops(site)
    if not body:
        return None
    return lower_pass(op, site, body)


def lower_pass(op: Any, site: Site, body: tuple[Any, ...]) -> VectorEngineOp:
    """The record of the chain `body` entered at `op` (`vector_init`, or the tag after an
    InterFirst inter-slice reduce)."""
    kind = record_kind(body).MNEMONIC
    if kind == "vector_pair":  # pair mode (tu_ops.lower.vector_pair)
        return lower_pair(op, site, body)
    if kind == "vector_branch":  # a comparison tag or branched operands (tu_ops.lower.vector_branch)
        return lower_branch(op, site, body)
    steps = tuple(ve_step(*o.step()) for o in body if o.step() is not None)
    rec = VectorEngineOp(result=Ref(site.result), input=Ref(site.src),
                         steps=steps, input_type=site.type_of(op.input), output_type=site.type_of(body[-1].result),
                         loc=op.loc)
    return rf_pass(rec, body, site)


@lowers(VectorIntraSliceReduce)
@lowers(vops.VectorFxp)
@lowers(vops.VectorClip)
@lowers(vops.VectorFxpToFp)
@lowers(vops.VectorFpToFxp)
@lowers(vops.VectorNarrowTrim)
@lowers(vops.VectorFpUnary)
@lowers(vops.VectorFpBinary)
@lowers(vops.VectorWidenPad)
@lowers(vops.VectorFinal)
@lowers(cops.VectorLogic)
@lowers(cops.VectorFpTernary)
@lowers(cops.VectorFpDiv)
@lowers(cops.VectorNarrowSplit)
@lowers(cops.VectorWidenConcat)
@lowers(cops.VectorReinterpret)
def _folded(op: Any, site: Site) -> None:
    """Every stage after `vector_init` is a step of its `vector` record."""
    return None


for _cls in unit_op_classes():  # the units whose traced op is made from their declaration
    lowers(_cls)(_folded)
