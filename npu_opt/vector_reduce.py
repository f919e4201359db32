"""The Vector Engine's two reducers in the DSL: `vector_intra_slice_reduce` and
`vector_inter_slice_reduce`.

`vector_intra_slice_reduce(m("R"), out_time, out_packet, op)` runs on the 4-way stream
(after `vector_narrow_trim` or the float ops), removing every factor of axis `R` from its
time and packet, on one stream; `op` is an `IntraSliceReduceOpI32` (`ADD_SAT`, `MAX`, `MIN`) or
`IntraSliceReduceOpF32` (`ADD`, `MAX`, `MIN`) value. The shapes are the traced op's rules
(VE-REDUCE-*); the op claims the reduce ALU (VE-ALU-1). A pass that went through
`vector_intra_slice_unzip` offers no reduce, before or after its zip (PAIR-REDUCE-1, as the
reference since v0.7): the reducer takes no group condition.

`vector_inter_slice_reduce(out_slice, out_time, op)` folds the 8-way stream across the
slices of its cluster; `op` is an `InterSliceReduceOpI32` (`ADD`, `ADD_SAT`, `MAX`, `MIN`)
or `InterSliceReduceOpF32` (`ADD`, `MAX`, `MIN`, `MUL`) value. It is offered in two orders
(`VeOrder`):

- InterFirst: right after `vector_init()`; the intra-slice chain may follow it, entered
  with `vector_intra_slice_tag`, and that chain offers no second inter-slice reduce;
- IntraFirst: after a Logic, Fxp, FxpToFp, Widen, FpToFxp or Clip stage of the chain;
  only `vector_final` follows.

The shapes are the traced op's rules (VE-INTER-*).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.location import Location
from ir.mapping.nodes import Mapping, Symbol
from ir.vector import enums as E
from ir.vector.stages import VeStage
from ir.vector.reduce_ops import VectorIntraSliceReduce
from ir.vector.inter_ops import VectorInterSliceReduce
from npu_opt.stagebase import Poisoned, kind_error, refuse_dead, stage_method
from npu_opt.vector_pass import _enum, _step

__all__ = ["intra_slice_reduce", "inter_slice_reduce", "mapping_args", "pair_reduce_refused",
           "pair_reduce_violation"]

_INTRA_OPS = (E.IntraSliceReduceOpI32, E.IntraSliceReduceOpF32)
_INTER_OPS = (E.InterSliceReduceOpI32, E.InterSliceReduceOpF32)


def _axis_name(value: Any) -> str | None:
    if isinstance(value, Symbol):
        return value.name
    return None


def mapping_args(stage: Any, loc: Location, name: str, **named: Any) -> Poisoned | None:
    """TYPE-6 for the first of the `named` arguments of `name` that is not a mapping."""
    for what, value in named.items():
        if not isinstance(value, Mapping):
            return refuse_dead(stage, loc, name, kind_error(
                f"`{what}` of `{name}` must be a mapping built by m(), not {type(value).__name__}"))
    return None


def pair_reduce_violation(zipped: bool) -> Violation:
    """PAIR-REDUCE-1, a reduce in a pair pass: on a pair (`zipped` False) or on the stream its
    zip merged (True)."""
    where = "the stream a zip merged" if zipped else "a pair"
    return Violation(
        "PAIR-REDUCE-1", f"`vector_intra_slice_reduce` is not available in pair mode (on {where})",
        label="this pass went through `vector_intra_slice_unzip`",
        help="the reducer takes no group condition, so it cannot fold only the group a zip wrote: "
             "end the pair pass (`.vector_final().commit_trim(...).commit()`) and reduce the committed "
             "tensor in a pass of its own (`begin` ... `vector_init()` ... `vector_intra_slice_reduce`)")


def pair_reduce_refused(stage: Any, loc: Location, zipped: bool) -> Poisoned:
    """PAIR-REDUCE-1 at a reduce in a pair pass (`pair_reduce_violation`)."""
    return refuse_dead(stage, loc, "vector_intra_slice_reduce", pair_reduce_violation(zipped))


@stage_method("vector_intra_slice_reduce")
def intra_slice_reduce(self: Any, loc: Location, axis: Any, out_time: Any, out_packet: Any, op: Any) -> Any:
    """Reduce axis `axis` (`m("R")`) out of the 4-way stream, leaving `[out_time, out_packet]`."""
    name = "vector_intra_slice_reduce"
    if getattr(self.ve, "zipped", False):
        return pair_reduce_refused(self, loc, zipped=True)
    if _axis_name(axis) is None:
        return refuse_dead(self, loc, name, kind_error(
            f"the reduce axis of `{name}` must be one axis written as m(\"R\"), not {axis!s:.40}"))
    bad = mapping_args(self, loc, name, out_time=out_time, out_packet=out_packet)
    if bad is not None:
        return bad
    op = _enum(self, loc, name, _INTRA_OPS, op)
    if isinstance(op, Poisoned):
        return op
    out = _step(self, loc, VectorIntraSliceReduce, VeStage.INTRA_SLICE_REDUCE, op.alu, axis=_axis_name(axis),
                out_time=out_time, out_packet=out_packet, op=op)
    if not isinstance(out, Poisoned):
        out.ve = attrs.evolve(out.ve, reduced=True)  # no VRF read after it in this pass (VE-REDUCE-6)
    return out


@stage_method("vector_inter_slice_reduce")
def inter_slice_reduce(self: Any, loc: Location, out_slice: Any, out_time: Any, op: Any) -> Any:
    """Fold the stream across slices, leaving `[out_slice, out_time]` (packet kept)."""
    name = "vector_inter_slice_reduce"
    bad = mapping_args(self, loc, name, out_slice=out_slice, out_time=out_time)
    if bad is not None:
        return bad
    op = _enum(self, loc, name, _INTER_OPS, op)
    if isinstance(op, Poisoned):
        return op
    first = self.ve.stage is None  # right after vector_init: the InterFirst order
    order = E.VeOrder.INTER_FIRST if first else E.VeOrder.INTRA_FIRST
    self.ve = attrs.evolve(self.ve, order=order)
    return _step(self, loc, VectorInterSliceReduce, VeStage.INTER_SLICE_REDUCE, out_slice=out_slice,
                 out_time=out_time, op=op)
