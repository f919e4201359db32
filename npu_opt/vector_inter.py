"""The Vector Engine's inter-slice reducer in the DSL: `vector_inter_slice_reduce`.

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

from ir.location import Location
from ir.vector import enums as E
from ir.vector.stages import VeStage
from ir.vector.inter_ops import VectorInterSliceReduce
from npu_opt.stagebase import Poisoned, stage_method
from npu_opt.vector_reduce import mapping_args

__all__ = ["inter_slice_reduce", "AFTER_INTER_CLASSES"]

_OPS = (E.InterSliceReduceOpI32, E.InterSliceReduceOpF32)


@stage_method("vector_inter_slice_reduce")
def inter_slice_reduce(self: Any, loc: Location, out_slice: Any, out_time: Any, op: Any) -> Any:
    """Fold the stream across slices, leaving `[out_slice, out_time]` (packet kept)."""
    from npu_opt.vector_stages import _enum, _step

    name = "vector_inter_slice_reduce"
    bad = mapping_args(self, loc, name, out_slice=out_slice, out_time=out_time)
    if bad is not None:
        return bad
    op = _enum(self, loc, name, _OPS, op)
    if isinstance(op, Poisoned):
        return op
    first = self.ve.stage is None  # right after vector_init: the InterFirst order
    order = E.VeOrder.INTER_FIRST if first else E.VeOrder.INTRA_FIRST
    self.ve = attrs.evolve(self.ve, order=order)
    return _step(self, loc, VectorInterSliceReduce, VeStage.INTER_SLICE_REDUCE, out_slice=out_slice,
                 out_time=out_time, op=op)


def declare_after_class(scalar: str, inter_first: bool) -> tuple[str, str, dict[str, Any]]:
    """The stage object after the inter-slice reduce, as (class name, docstring, methods):
    `vector_final`, and in the InterFirst order the intra-slice chain's `vector_intra_slice_tag`.
    `npu_opt.gen_stage_classes` writes these classes out."""
    from npu_opt.vector_stages import _final, _tag

    body: dict[str, Any] = {"vector_final": _final}
    if inter_first:
        body["vector_intra_slice_tag"] = _tag
    order = "InterFirst" if inter_first else "IntraFirst"
    doc = f"After the inter-slice reduce ({order}) with an {scalar} stream: offers {', '.join(sorted(body))}."
    return f"VectorInterSliceReduce{order}{scalar.upper()}Stream", doc, body


# (scalar, inter_first) -> its class; npu_opt.vector_inter_classes (generated from `declare_after_class`) fills it
AFTER_INTER_CLASSES: dict[tuple[str, bool], type] = {}
