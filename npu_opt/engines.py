"""The engines a tensor method takes as its first argument: the Tensor DMA (`ctx.tdma`) and
the checks that a call names the engine it runs on (a Tensor DMA for the copies, the Sub
context for the parallel copies and `memset`). Below the tensors and views, which check
their engine arguments, and the operations that run on them (npu_opt.dma, npu_opt.fills).
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from npu_opt.stagebase import Poisoned, refuse_call

__all__ = ["TensorDma", "check_sub"]


class TensorDma:
    """The on-chip Tensor DMA engine, `ctx.tdma`."""

    def __repr__(self) -> str:
        return "ctx.tdma"

    def __getattr__(self, name: str) -> Any:
        if name == "begin":
            return _begin_on_dma
        raise AttributeError(f"ctx.tdma has no attribute {name!r}")


def _begin_on_dma(*args: Any, **kwargs: Any) -> Poisoned:
    return refuse_call(Violation("CTX-1", "`begin` is called on a Tensor Unit context, not on the DMA engine",
                                 help="use ctx.main.begin(view) or ctx.sub.begin(view)"), "begin")


def _check_engine(dma: Any, stage: str) -> Violation | None:
    if isinstance(dma, TensorDma):
        return None
    if type(dma).__name__ == "TuContext":
        return Violation("CTX-1", f"`{stage}` runs on the Tensor DMA engine, not on ctx.{dma.name}",
                         help=f"pass ctx.tdma: `.{stage}(ctx.tdma, ...)`")
    return Violation("TYPE-6", f"the first argument of `{stage}` must be ctx.tdma, not {type(dma).__name__}",
                     help=f"pass ctx.tdma: `.{stage}(ctx.tdma, ...)`")


def check_sub(sub: Any, method: str) -> Violation | None:
    """The parallel copies and memset run on `ctx.sub`."""
    if type(sub).__name__ == "TuContext" and getattr(sub, "name", None) == "sub":
        return None
    return Violation("CTX-1", f"`{method}` runs on the Sub context, not on {sub!r}",
                     help=f"pass ctx.sub first: `.{method}(ctx.sub, ...)`")
