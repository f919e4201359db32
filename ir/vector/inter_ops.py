"""The traced inter-slice reduce: `vector_inter_slice_reduce(out_slice, out_time, op)`.

The op types its result as the stream with `out_slice` and `out_time` (chip, cluster and
packet kept), checks the op enum against the scalar (VE-DTYPE-1) and the shapes
(VE-INTER-1 ... 6, `ir.vector.inter_reduce`). It lowers to its own `inter_slice_reduce`
record (`tu_ops.vector_inter`), not to a step of a `vector` record: it is the one stage
whose result lives on other slices than its input.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.diagnostic import Violation
from ir.mapping.nodes import Mapping
from ir.op_frame import attr, rule
from ir.vector import enums as E
from ir.vector.inter_reduce import inter_fault
from ir.vector.ops import VectorOp, _dtype_fault

__all__ = ["VectorInterSliceReduce"]


@attrs.frozen(kw_only=True)
class VectorInterSliceReduce(VectorOp):
    """Fold the stream across the slices of its cluster: `[slice, time] -> [out_slice, out_time]`."""

    STAGE = "vector_inter_slice_reduce"
    FOLDED: ClassVar[bool] = False
    RETYPED = ("out_slice", "out_time")
    out_slice: Mapping = attr()
    out_time: Mapping = attr()
    op: Any = attr()

    @rule("VE-DTYPE-1")
    def _family(self) -> Violation | None:
        return _dtype_fault(self, {"i32": E.InterSliceReduceOpI32, "f32": E.InterSliceReduceOpF32})

    @rule("VE-INTER-1")
    def _shapes(self) -> Violation | None:
        t = self.input.type
        others = frozenset(t.chip.axes() | t.cluster.axes() | t.packet.axes())
        return inter_fault(t.slice, t.time, self.out_slice, self.out_time, others)
