"""A traced `ToSpm` / `SpmToDm` lowered to an `SpmDmaOp` (tu_ops/spm.py, docs/machine/spm.md):
the commands of the DMA between the DM side and the SPM's HBM-like store (`ir.spm.spm_as_hbm`),
DM-side bases relative to allocation 0 (the allocation pass adds them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir import ops as ir
from ir.spm import spm_as_hbm
from tu_ops.base import Ref
from tu_ops.lower.dma import lower_dma
from tu_ops.spm import SpmDmaOp

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["lower_spm_move"]


def lower_spm_move(op: Any, result: int, src: int, target: Target) -> SpmDmaOp:
    """The SpmDmaOp of a trace-valid `to_spm` (into SPM) or SPM `to_dm` whose result is `%result`."""
    src_t, dst_t = op.src.type, op.result.type
    into_spm = dst_t.kind == "spm"
    stored_src = spm_as_hbm(src_t) if not into_spm else src_t
    stored_dst = spm_as_hbm(dst_t) if into_spm else dst_t
    cls = ir.ToHbm if into_spm else ir.ToDm
    copy = lower_dma(cls(src=ir.Value(src, stored_src), result=ir.Value(result, stored_dst), loc=op.loc),
                     result, src, stored_src, stored_dst, target)
    return SpmDmaOp(result=Ref(result), src=Ref(src), kind=copy.kind, element_type=src_t.dtype,
                    commands=copy.commands, input_type=src_t, output_type=dst_t,
                    src_alloc=copy.src_alloc, dst_alloc=copy.dst_alloc, loc=op.loc)
