"""`begin_interleaved(lhs, rhs, m("I"))`: a stream over two DM views of one type, alternating
along the size-2 axis `I`.

The begun stream is `Stream[D; Chip, Cluster, Slice; 1, I, Element]`: position `i` of `I`
reads view `i` (0 is `lhs`, 1 is `rhs`), so a fetch that puts `I` in time alternates the two
tensors, and `vector_intra_slice_unzip(m("I"), ...)` splits them into the two groups of pair
mode. Rules INTERLEAVE-1 (the views differ) and INTERLEAVE-2 (the axis), after the checks
of `begin` on the view. Two tiles read at different element positions carry `rhs_shift`: the
cells `rhs` is read past `lhs`'s position, a trace-time number even when the tiles sit at
runtime starts (they then move together; `npu_opt.interleave`); absent when they are read alike.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.mapping.nodes import IDENTITY, Mapping, Symbol
from ir.op_frame import attr, operand, rule
from ir.ops import Begin, Value
from ir.types import StreamType, Type, same_layout

__all__ = ["BeginInterleaved"]


@attrs.frozen(kw_only=True)
class BeginInterleaved(Begin):
    """Start a stream over two DM views interleaved along the size-2 axis `axis`."""

    STAGE = "begin_interleaved"
    rhs: Value = operand()
    axis: Mapping = attr()
    rhs_shift: int | None = attr(default=None, optional=True)   # cells rhs is read past lhs; None: alike

    def attributes(self) -> list[tuple[str, Any]]:
        return [(k, v) for k, v in super().attributes() if k != "rhs_shift" or v is not None]

    def infer_type(self) -> Type:
        t = self.view.type
        return StreamType(t.dtype, t.chip, t.cluster, t.slice, IDENTITY, self.axis.pair(t.element), self.context)

    @rule("INTERLEAVE-1")
    def _same_views(self) -> Violation | None:
        a, b = self.view.type, self.rhs.type
        if same_layout(a, b):
            return None
        return Violation("INTERLEAVE-1", f"`begin_interleaved` interleaves two views of one type, not {a} and {b}",
                         label="the two views differ", help="give both tensors the same dtype and mappings")

    @rule("INTERLEAVE-2")
    def _axis(self) -> Violation | None:
        element = self.view.type.element
        if isinstance(self.axis, Symbol) and self.axis.size == 2 and self.axis.name not in element.axes():
            return None
        return Violation("INTERLEAVE-2", f"the interleave axis {self.axis} is not one axis of size 2 outside the "
                         f"element {element}", help="declare a fresh axis of size 2, e.g. `axes(I=2)`, and pass `m(\"I\")`")
