"""`view.dm_cluster_shuffle(ctx.tdma, DIM, pattern)`, `view.dm_chip_shuffle(...)` and
`hbm.hbm_chip_shuffle(...)`, traced into `ir.gather_ops.Shuffle` (docs/machine/topology.md).

`pattern[target] = source`: chip (cluster) `target` of the result holds what chip (cluster)
`source` of the input held. `hbm_cluster_shuffle` is refused (SHUFFLE-3).
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.gather_ops import Shuffle
from npu_opt.dma import TensorDma
from npu_opt.stagebase import location_of, refuse_call
from npu_opt.tensors import DmTensor, HbmTensor
from npu_opt.trace import current

__all__ = ["shuffle"]


def _pattern(pattern: Any) -> tuple[int, ...] | None:
    try:
        items = tuple(pattern)
    except TypeError:
        return None
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in items):
        return None
    return items


def shuffle(src: Any, dma: Any, dim: Any, pattern: Any, level: str, stage: str) -> Any:
    """Trace one shuffle; wrong arguments are TYPE-6 (CTX-1 for another engine). `dim` may be
    left out (`(ctx.tdma, pattern)`, v0.9's inferred `CHIP_DIM`): it is the pattern's length."""
    tracer = current()
    loc = location_of(stage)
    if pattern == () and not isinstance(dim, (int, type(None))) and _pattern(dim) is not None:
        dim, pattern = len(tuple(dim)), dim   # v0.9: DIM is read off the pattern's length
    items = _pattern(pattern)
    bad = None
    if stage == "hbm_cluster_shuffle":
        bad = Violation("SHUFFLE-3", "`hbm_cluster_shuffle` is not available: an HBM tensor has no Cluster level "
                                     "(clusters are chosen by `to_dm`), and the reference leaves it unimplemented",
                        help="move the tensor to DM and call `view().dm_cluster_shuffle(ctx.tdma, DIM, pattern)`")
    elif not isinstance(dma, TensorDma):
        code = "CTX-1" if type(dma).__name__ == "TuContext" else "TYPE-6"
        bad = Violation(code, f"`{stage}` runs on the Tensor DMA engine: pass ctx.tdma first",
                        help=f"`.{stage}(ctx.tdma, DIM, pattern)`")
    elif isinstance(dim, bool) or not isinstance(dim, int) or items is None:
        bad = Violation("TYPE-6", f"`{stage}` takes ctx.tdma, the int DIM and a list of ints (pattern[target] = "
                                  f"source), not {dim!r:.20}, {pattern!r:.40}", help=f"`.{stage}(ctx.tdma, 2, [1, 0])`")
    if bad is not None:
        return refuse_call(bad, stage)
    op = Shuffle.build(tracer.value, src=src.value, level=level, dim=dim, pattern=",".join(map(str, items)), loc=loc)
    tracer.emit(op)
    return (DmTensor if op.result.type.kind == "dm" else HbmTensor)(op.result)
