"""Tensor DMA rules DMA-1..6 (pipeline.md 4)."""

from __future__ import annotations

from ir.diagnostic import Violation

__all__ = ["check_dma"]


def check_dma(op) -> Violation | None:
    """DMA-1..6 for a ToDm / ToHbm op, first failure wins."""
    src, dst = op.src.type, op.result.type
    if src.dtype != dst.dtype:
        return Violation("DMA-1", f"a DMA cannot change the dtype ({src.dtype} -> {dst.dtype})",
                         help="convert in the Tensor Unit (fetch_cast / cast) instead")
    return None
