"""`ctx.main.begin_interleaved(lhs, rhs, m("I"))`: one stream over two DM views (`ir.interleave_ops`).

The feed reads both views in one sequencer walk: a loop of two steps from the first view's
cells to the second's, whose step is a number fixed in the command, and a runtime tile
start moves only where the walk begins. So the two views may be tiles at different starts
(fixed, or runtime ones that move together: `i` and `i + 1`, `2 * i` and `2 * i + 1`) as
long as the distance between them is known while tracing (`rhs_shift`); a distance that
changes at run time (`i` and `3 - i`, a runtime start and a fixed one, two launch values)
is RUNTIME-2 at the call (docs/runtime.md#runtime-tile-starts).
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.interleave_ops import BeginInterleaved
from ir.loop_affine import Affine
from ir.mapping.nodes import Mapping
from npu_opt.stagebase import Poisoned, location_of, refuse_call
from npu_opt.stages import BeginStream
from npu_opt.tensor_data import DmTensorData, DmTensorViewData
from npu_opt.trace import TracedStream, current
from npu_opt.views import dma_source

__all__ = ["begin_interleaved", "rhs_shift"]


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


def rhs_shift(lhs: Any, rhs: Any) -> int | Violation | None:
    """The element cells `rhs` is read past `lhs`, a trace-time number; None when the two are
    read alike (or shifted on an outer level, which the lowering refuses: VIEW-10); or the
    RUNTIME-2 of two views whose distance changes at run time."""
    offsets = [tuple(getattr(v, "_offsets", None) or ()) for v in (lhs, rhs)]
    starts = [getattr(v, "_runtime", None) for v in (lhs, rhs)]
    width = max(len(o) for o in offsets)
    a, b = (o or (0,) * width for o in offsets)
    same_start = (starts[0] is None and starts[1] is None) or (
        None not in starts and tuple(starts[0]) == tuple(starts[1]))   # one scalar, one step: they move together
    if (a == b and same_start) or a[:-1] != b[:-1]:
        return None
    if same_start:
        return b[-1] - a[-1]
    moved = [None if s is None else _moved_cells(s) for s in starts]
    if None not in moved and not moved[1].plus(moved[0], -1).terms:   # the same multiples of the indices
        return b[-1] - a[-1] + moved[1].plus(moved[0], -1).const
    return Violation(
        "RUNTIME-2", "an interleaved `begin` reads its two views in one walk whose step from the first view to the "
                     "second is fixed in the command (a runtime start moves only where the walk begins), so the "
                     "second view must sit a trace-time distance from the first; here the distance changes at run "
                     "time",
        help="tile both views at starts that move together (`i` and `i + 1`, or the same scalar), or copy one "
             "tile out with `.to_dm(ctx.tdma, ...)` first and interleave the copy")


def _moved_cells(start: Any) -> Affine | None:
    """The cells a runtime start moves its view by, affine in the loop indices (None: a launch
    value, or a start no affine form covers)."""
    form = start.scalar.form
    return form.times(start[1]) if isinstance(form, Affine) else None


def begin_interleaved(context: Any, lhs: Any, rhs: Any, axis: Any) -> Any:
    """The begun stream of `context` (a TuContext) over `lhs` and `rhs`."""
    tracer = current()
    loc = location_of("begin_interleaved")
    if isinstance(lhs, Poisoned) or isinstance(rhs, Poisoned):
        return Poisoned("begin_interleaved")
    fault = _fault(lhs, rhs, axis)
    if fault is not None:
        return refuse_call(fault, "begin_interleaved")
    shift = rhs_shift(lhs, rhs)
    if isinstance(shift, Violation):
        return refuse_call(shift, "begin_interleaved")
    op = BeginInterleaved.build(tracer.value, view=dma_source(lhs), rhs=dma_source(rhs), axis=axis,
                                context=context.name, rhs_shift=shift, loc=loc)   # each window names its start
    chain = TracedStream(loc)
    tracer.chains.append(chain)
    tracer.emit(op)
    return BeginStream(op.result, chain)
