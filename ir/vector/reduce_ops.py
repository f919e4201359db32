"""The traced intra-slice reduce: `vector_intra_slice_reduce(m("R"), out_time, out_packet, op)`.

The op types its result as the stream with `out_time` and `out_packet` (4-way), checks
the op enum against the scalar (VE-DTYPE-1), the shapes (VE-REDUCE-1 ... 5,
`ir.vector.intra_reduce`) and, when the reduce axis is padded, that the Valid Count
Generator can count the padding out (the VCG rules, `ir.valid_count`). It is a step of its
pass's `vector` record: `INTRA_REDUCE_I32` or `INTRA_REDUCE_F32`, arg 1 when the packet is
reduced to `1 # 4`, else 0.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.mapping.nodes import Mapping
from ir.op_frame import attr, rule
from ir.vector import enums as E
from ir.valid_count import derive_vcg
from ir.vector.intra_reduce import axis_padded, reduced_packet, shape_fault
from ir.vector.ops import VectorOp, _dtype_fault

__all__ = ["VectorIntraSliceReduce"]


@attrs.frozen(kw_only=True)
class VectorIntraSliceReduce(VectorOp):
    """Reduce every factor of `axis` out of the 4-way stream's time and packet."""

    STAGE = "vector_intra_slice_reduce"
    RETYPED = ("out_time", "out_packet")
    axis: str = attr()
    out_time: Mapping = attr()
    out_packet: Mapping = attr()
    op: Any = attr()

    def step(self) -> tuple[str, str, int]:
        return f"INTRA_REDUCE_{(self.scalar or 'i32').upper()}", self.op.name, int(reduced_packet(self.out_packet))

    @rule("VE-DTYPE-1")
    def _family(self) -> Violation | None:
        return _dtype_fault(self, {"i32": E.IntraSliceReduceOpI32, "f32": E.IntraSliceReduceOpF32})

    @rule("VCG-2")
    def _counts(self) -> Violation | None:
        """A padded reduce axis: the Valid Count Generator must be able to count its stream
        (VCG-2 ... VCG-4, VCG-6 ... VCG-10, `ir.valid_count`)."""
        t = self.input.type
        if not axis_padded(self.axis, t.slice, t.time, t.packet):
            return None
        found = derive_vcg(t.slice, t.time, t.packet)
        return found if isinstance(found, Violation) else None

    @rule("VE-REDUCE-1")
    def _shapes(self) -> Violation | None:
        t = self.input.type
        return shape_fault(self.axis, t.time, t.packet, self.out_time, self.out_packet)

