"""`memset`, the parallel copies and `ctx.pdma` (docs/views.md), traced into `ir` ops.

`view.memset(ctx.sub, value)` fills the live cells of a DM write view; the value must be
representable in the tensor's dtype (VIEW-11). `t.to_dm_pcopy(ctx.sub, DmTensor[...])`
and `view.to_dm_view_pcopy(ctx.sub, dst)` are DM -> DM copies run by the Sub context:
the same data movement as `to_dm` / `to_dm_view`, checked by the same DMA rules.
`ctx.pdma` is the PCIe DMA engine: it moves HBM -> HBM only (`to_hbm`, `to_hbm_view`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ir.diagnostic import Violation
from ir.view_ops import Memset
from npu_opt.dma import TensorDma, _dma
from npu_opt.engines import check_sub
from npu_opt.scalars import plain_number
from npu_opt.stagebase import location_of, refuse_call as _refuse
from npu_opt.trace import current

__all__ = ["PcieDma", "memset", "pcopy", "check_sub", "representable"]


class PcieDma(TensorDma):
    """The PCIe DMA engine, `ctx.pdma`: HBM -> HBM copies."""

    def __repr__(self) -> str:
        return "ctx.pdma"


def representable(value: Any, dtype: Any) -> bool:
    """Whether a Python number is a value of `dtype` (floats: finite or not, after rounding)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if dtype.is_float:
        with np.errstate(over="ignore"):
            return not math.isfinite(value) or bool(np.isfinite(np.asarray(value, np.float64).astype(dtype.host_dtype)))
    return isinstance(value, int) and dtype.min <= value <= dtype.max


def _bad_fill(value: Any, dtype: Any) -> Violation:
    """VIEW-11 for a fill `representable` refused: not a number at all, or not one of `dtype`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return Violation("VIEW-11", f"the fill value {value!r} ({type(value).__name__}) is not a number known "
                                    "while tracing", help=f"pass a Python (or numpy) number that {dtype} holds")
    return Violation("VIEW-11", f"the fill value {value!r} is not a value of {dtype}",
                     help=f"pass a number in the range of {dtype}")


def memset(view: Any, sub: Any, value: Any) -> None:
    """`view.memset(ctx.sub, value)` on a DM write view; the reference's argument order,
    `view.memset(value, ctx.sub)`, means the same (docs/porting.md)."""
    if check_sub(sub, "memset") is not None and check_sub(value, "memset") is None:
        sub, value = value, sub
    value = plain_number(value)
    bad = check_sub(sub, "memset")
    if bad is None and view.type.kind != "dm":
        bad = Violation("VIEW-9", "`memset` fills DM write views; this view is of an HBM tensor")
    if bad is None and not representable(value, view.type.dtype):
        bad = _bad_fill(value, view.type.dtype)
    if bad is not None:
        _refuse(bad, "memset")
        return
    tracer = current()
    start, stride, limit = getattr(view, "_runtime", None) or (None, None, None)   # a tile at a runtime start
    op = Memset.build(tracer.value, into=view._base.value, view=view.type, offset=view._offsets, value=value,
                      start=start, start_stride=stride, start_limit=limit, loc=location_of("memset"))
    tracer.emit(op)
    view._base.value = op.result


def pcopy(src: Any, sub: Any, dst: Any) -> Any:
    """`t.to_dm_pcopy(ctx.sub, DmTensor[...])`: a DM -> DM copy, the rules of `to_dm`."""
    bad = check_sub(sub, "to_dm_pcopy")
    if bad is not None:
        return _refuse(bad, "to_dm_pcopy")
    return _dma(src, TensorDma(), dst, "dm")
