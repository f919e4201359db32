"""Where each DM and TRF tensor lives: the allocation rule of visa/visa.lark.

A VISA record names a tensor (`source=(%3, ...)`, `weights=%5`) but not its address: the
address is fixed by the rule the artifact was built with. Body steps are counted in
order (a `dma` is one step, a TU program one step); a tensor is live from the step that
creates it through the last step that reads it; each DM tensor made by a `dma` or a
`commit` sits at the lowest multiple of 8 where it overlaps no DM tensor live at its
creating step, each TRF tensor at the rows tu_ops/trf_place.py gives it (the lowest row,
even for a `Flit2` load, where it overlaps no live TRF tensor, kept off the previous TRF
tensor's rows outside a rolled loop when the TRF has room).

Readers (a feed's DM read, a contraction's TRF read) use these addresses; writers use
their own fields (`dst_base`, `dest`, `base_row`). An artifact whose writer fields
disagree with the rule therefore reads other bytes, as the hardware would.
"""

from __future__ import annotations

from typing import Any

from tu_ops.dma_view import dm_roots
from tu_ops.program import LoweredKernel, TuProgram
from visa.facts import last_uses, lowest, resident_allocations, tensor_bytes, trf_rows

__all__ = ["allocate", "lowest"]


def allocate(kernel: LoweredKernel, target: Any) -> tuple[dict[int, int], dict[int, int]]:
    """(DM byte address, TRF first row) of every DM / TRF tensor, by value id."""
    last, roots = last_uses(kernel), dm_roots(kernel.ops())
    # a resident DM parameter sits at its signature address throughout
    dm = {a.tensor.id: (a.base, a.base + a.size, a.last_step) for a in resident_allocations(kernel)}
    for i, step in enumerate(kernel.steps):
        for op in (step.ops if isinstance(step, TuProgram) else (step,)):
            end = max(i, last.get(op.result.id, i))
            if op.result.id in roots:
                continue
            if (op.NEW_DM_TENSOR or op.MNEMONIC in ("commit", "tensor_new")) and op.output_type.kind == "dm":
                size = tensor_bytes(op.output_type, target)
                busy = [(b, e) for b, e, lst in dm.values() if lst >= i]
                base = lowest(busy, size, 8)
                dm[op.result.id] = (base, base + size, end)
    out = {k: v[0] for k, v in dm.items()}
    out.update({a: out[r] for a, r in roots.items() if r in out})  # a write into DM keeps the address
    return out, trf_rows(kernel, target)   # a trf_load's, or a TRF tensor's made by new()
