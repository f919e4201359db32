"""`ctx.main.begin_interleaved(lhs, rhs, m("I"))`: one stream over two DM views (`ir.interleave_ops`)."""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.interleave_ops import BeginInterleaved
from ir.mapping.nodes import Mapping
from npu_opt.stagebase import Poisoned, location_of, refuse_call
from npu_opt.stages import BeginStream
from npu_opt.tensor_data import DmTensorData, DmTensorViewData
from npu_opt.trace import TracedStream, current
from npu_opt.views import dma_source

__all__ = ["begin_interleaved"]


def _fault(lhs: Any, rhs: Any, axis: Any) -> Violation | None:
    for name, view in (("lhs", lhs), ("rhs", rhs)):
        if not isinstance(view, DmTensorViewData):
            hint = f"call `.view()` on the DM tensor: `{name}.view()`" if isinstance(view, DmTensorData) else None
            return Violation("TYPE-6", f"`begin_interleaved` takes DmTensorViews, not {type(view).__name__} as `{name}`",
                             help=hint)
    if not isinstance(axis, Mapping):
        return Violation("TYPE-6", f"the axis of `begin_interleaved` is a mapping built by m(), not {type(axis).__name__}",
                         help='e.g. `ctx.main.begin_interleaved(lhs.view(), rhs.view(), m("I"))`')
    return None


def begin_interleaved(context: Any, lhs: Any, rhs: Any, axis: Any) -> Any:
    """The begun stream of `context` (a TuContext) over `lhs` and `rhs`."""
    tracer = current()
    loc = location_of("begin_interleaved")
    if isinstance(lhs, Poisoned) or isinstance(rhs, Poisoned):
        return Poisoned("begin_interleaved")
    fault = _fault(lhs, rhs, axis)
    if fault is not None:
        return refuse_call(fault, "begin_interleaved")
    starts = [getattr(v, "_runtime", None) for v in (lhs, rhs)]
    if any(starts) and (starts[0] is None or starts[1] is None or tuple(starts[0]) != tuple(starts[1])
                        or getattr(lhs, "_offsets", None) != getattr(rhs, "_offsets", None)):
        return refuse_call(Violation(
            "RUNTIME-2", "an interleaved `begin` reads its two views at one start: a view tiled at a runtime start "
                         "is interleaved only with a view of the same type tiled at the same start",
            help="tile both views with the same scalar (`.tile(..., i)` on each), or copy the tiles out with "
                 "`.to_dm(ctx.tdma, ...)` first"), "begin_interleaved")
    op = BeginInterleaved.build(tracer.value, view=dma_source(lhs), rhs=dma_source(rhs), axis=axis,
                                context=context.name, loc=loc)   # at one runtime start, each window names it
    chain = TracedStream(loc)
    tracer.chains.append(chain)
    tracer.emit(op)
    return BeginStream(op.result, chain)
