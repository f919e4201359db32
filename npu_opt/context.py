"""`Context`: the engines a `@device` kernel drives (`ctx.main`, `ctx.sub`, `ctx.tdma`)."""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.ops import Begin
from ir.rules.view_writes import check_begin_window
from ir.types import MAIN, SUB
from npu_opt.dma import TensorDma
from npu_opt.fills import PcieDma
from npu_opt.interleave import begin_interleaved
from npu_opt.stagebase import Poisoned, location_of, refuse_call
from npu_opt.stages import BeginStream
from npu_opt.loops import loop
from npu_opt.runtime_scalars import when
from npu_opt.tensors import DmTensor, DmTensorView
from npu_opt.trace import TracedStream, current

__all__ = ["Context", "TuContext"]


class TuContext:
    """A Tensor Unit context (`ctx.main` or `ctx.sub`); offers `begin`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ctx.{self.name}"

    def begin(self, view: Any) -> Any:
        """Start a stream over a DM view: `Stream[D; Chip, Cluster, Slice; 1, Element]`."""
        tracer = current()
        loc = location_of("begin")
        if isinstance(view, Poisoned):  # a consequence of an error already reported
            return Poisoned("begin")
        if not isinstance(view, DmTensorView):
            hint = "call `.view()` on the DM tensor: `begin(t.view())`" if isinstance(view, DmTensor) else None
            return refuse_call(Violation("TYPE-6", f"`begin` takes a DmTensorView, not {type(view).__name__}",
                                         help=hint), "begin")
        offsets = getattr(view, "_offsets", None)  # a window of a DM tensor (VIEW-15)
        bad = offsets and check_begin_window(offsets)
        if bad:
            return refuse_call(bad, "begin")
        source = view.read_value() if hasattr(view, "read_value") else view.value  # a runtime tile start too
        op = Begin.build(tracer.value, view=source, context=self.name, loc=loc)
        chain = TracedStream(loc)
        tracer.chains.append(chain)
        tracer.emit(op)
        return BeginStream(op.result, chain)

    def begin_interleaved(self, lhs: Any, rhs: Any, axis: Any) -> Any:
        """Start a stream over two DM views alternating along the size-2 axis `axis`:
        `Stream[D; Chip, Cluster, Slice; 1, axis, Element]` (`npu_opt.interleave`)."""
        return begin_interleaved(self, lhs, rhs, axis)


class Context:
    """What a `@device` function receives first: `main`, `sub` and `tdma`."""

    def __init__(self) -> None:
        self.main = TuContext(MAIN)
        self.sub = TuContext(SUB)
        self.tdma = TensorDma()
        self.pdma = PcieDma()

    def __repr__(self) -> str:
        return "Context(main, sub, tdma, pdma)"

    def when(self, cond: Any) -> Any:
        """`with ctx.when(cond):` guard the block's work with a runtime bool (docs/runtime.md)."""
        return when(cond)

    def loop(self, first: Any, second: Any = None) -> Any:
        """`for i in ctx.loop(n)` / `ctx.loop(start, stop)`: a rolled loop, its body traced
        once and run once per index `i` (a usize runtime scalar; docs/loops.md)."""
        return loop(self, first, second)
