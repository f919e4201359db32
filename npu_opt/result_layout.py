"""A returned bare `to_hbm(ctx.tdma)` takes the layout of the return annotation.

Rust infers the destination layout of `to_hbm` from the function's return type, so a
kernel that ends `return y.to_hbm(ctx.tdma)` writes its result in the annotated layout,
which may reorder, pad or split the default one (the DMA transposes on the way). The
trace first gives such a call the default layout (every axis whole); when its value is
returned, used nowhere else and the annotation differs, the call is given the annotated
type instead and its DMA rules are checked again.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.ops import ToHbm, Value
from ir.types import HbmType
from npu_opt.trace import Tracer

__all__ = ["adopt_annotation"]


def adopt_annotation(tracer: Tracer, handle: Any, want: HbmType) -> bool:
    """Retype the inferred `to_hbm` that made `handle` to `want`; False when it is not one
    (another op made it, or another op reads it). A DMA rule the new layout breaks is
    reported at the call and the result counts as adopted (no second report)."""
    vid = handle.value.id
    position = next((i for i, op in enumerate(tracer.ops)
                     if isinstance(op, ToHbm) and op.result is not None and op.result.id == vid), None)
    if position is None or not tracer.ops[position].inferred or handle.type.dtype != want.dtype:
        return False
    if any(v.id == vid for op in tracer.ops for v in op.operands()):
        return False
    op = tracer.ops[position]
    new = attrs.evolve(op, result=Value(vid, want))
    tracer.ops[position] = new
    handle.value = new.result
    violation = new.check()
    if violation is not None:
        tracer.refuse(violation, new.loc, new.STAGE, new)
        tracer.poisoned.add(vid)
    return True
