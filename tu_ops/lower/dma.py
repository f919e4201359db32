"""`to_dm` / `to_hbm` lowered to a DmaOp: the commands are the record's own derivation from
its two types (`tu_ops.dma_commands.dma_record`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir import ops as ir
from ir.errors import InternalError
from tu_ops.base import Ref
from tu_ops.dma import DmaOp
from tu_ops.dma_commands import dma_record

if TYPE_CHECKING:
    from tu_ops.target import Target

__all__ = ["lower_dma"]


def lower_dma(op: ir.Op, result: int, src: int, src_t: Any, dst_t: Any, target: Target) -> DmaOp:
    """The DmaOp of a `to_dm` / `to_hbm` call, its DM-side bases relative to allocation 0."""
    try:
        return dma_record(Ref(result), Ref(src), src_t, dst_t, target, op.loc)
    except ValueError as e:
        raise InternalError(f"{op.text()}: {e}") from None
