"""The verifier's check of a DMA record's commands (visa/verify.py): one command per live
(chip, cluster) of the DM side (per chip for HBM -> HBM), moving the side's live bytes, or
the padded rows of a DMA into DM that moves its tail with the padding (`ir.rules.dma_tail`)."""

from __future__ import annotations

import math
from typing import Any

from ir.mapping.cells import Index
from ir.mapping.factors import PaddingFactor, RaggedFactor
from tu_ops.enums import DmaKind
from tu_ops.dma_commands import broadcast_loops, whole_run_cells
from visa.facts import tensor_bytes

__all__ = ["check_dma"]


def _live(mapping: Any) -> list[int]:
    """Positions of a (small) spatial mapping that hold an index, not padding."""
    return [p for p in range(mapping.size) if isinstance(mapping.cell(p), Index)]


def _live_count(mapping: Any) -> int:
    """Live positions of a mapping, from its factor form (padding factors hold one)."""
    count = 1
    for f in mapping.factors():
        cells = getattr(f, "cells", None)
        if cells is not None:
            count *= sum(isinstance(c, Index) for c in cells)
        elif not isinstance(f, PaddingFactor):
            count *= f.extent
    return count


def _padded_tail_bytes(op: Any, side: Any, target: Any) -> int | None:
    """Bytes per partition of a DMA into DM that moves its tail's ragged or pure padding digit
    with the padding (`ir.rules.dma_tail`: a live run that is not 8-byte aligned; the piece
    innermost, or with only whole digits inside it, as in `[A, B] # 16`, `C4 # 8` or `C3 # 8`),
    else None."""
    fs = side.element.factors()
    if not op.kind.into_dm or not fs:
        return None
    k, inner = len(fs) - 1, 1
    while k > 0 and getattr(fs[k], "cells", None) is None and getattr(fs[k], "axis", None) is not None:
        inner *= fs[k].extent
        k -= 1
    cells = fs[k].cells if isinstance(fs[k], RaggedFactor) else None
    if cells is None and not isinstance(fs[k], PaddingFactor):
        return None
    bits = target.bits_of(side.dtype) or 0
    live = (1 if cells is None else sum(isinstance(c, Index) for c in cells)) * inner  # padding: its cell 0
    extent = fs[k].extent
    if cells is not None and k > 0 and isinstance(fs[k - 1], PaddingFactor):
        extent *= fs[k - 1].extent  # `C3 # 8`: padding over `C3 # 4`, one padded row (dma_tail.merged_padding)
    align = 8 * target.constants.DMA_DM_ALIGN
    if (live * bits) % align == 0 or (extent * inner * bits) % align:
        return None
    cells = _live_count(side.element) // live * extent * inner
    return _live_count(side.slice) * -(-cells * bits // 8)


def check_dma(op: Any, target: Any, fail: Any) -> None:
    """One command per live (chip, cluster) of the DM side (per chip for HBM -> HBM), dmn 0,
    moving the side's live slices x live element bytes in all."""
    src_t, dst_t = op.view_types() if hasattr(op, "view_types") else (op.input_type, op.output_type)
    side = dst_t if op.kind in (DmaKind.HBM_TO_DM, DmaKind.DM_TO_DM, DmaKind.HBM_TO_HBM) else src_t
    if side.kind == "dm":
        dc, dk = getattr(op, "chip_shift", None) or 0, getattr(op, "cluster_shift", None) or 0  # a shifted window
        parts = {(c + dc, k + dk, 0) for c in _live(side.chip) for k in _live(side.cluster)}
        per_part = _live_count(side.slice) * -(-_live_count(side.element) * (target.bits_of(side.dtype) or 0) // 8)
    else:
        parts = {(c, 0, 0) for c in _live(side.chip)}
        per_part = tensor_bytes(side, target)
        if hasattr(op, "view_types"):  # a window moves its live cells only
            per_part = -(-_live_count(side.element) * (target.bits_of(side.dtype) or 0) // 8)
    given = {(c.part.chip, c.part.cluster, c.part.dmn) for c in op.commands}
    if given != parts:
        raise fail.op(op, f"commands serve partitions {sorted(given)}; the DM side's live (chip, cluster, dmn) "
                          f"are {sorted(parts)}")
    if op.MNEMONIC in ("dma", "dma_window", "dma_into"):   # a scatter's output axis is its index's, not a broadcast
        per_part *= math.prod(n for n, _ in broadcast_loops(src_t, dst_t))  # docs/machine/dma.md
    moved = sum(math.prod(e.size for e in c.entries) for c in op.commands)
    padded = _padded_tail_bytes(op, side, target) if side.kind == "dm" else None
    whole = whole_run_cells(src_t, dst_t) if side.kind == "dm" else None  # runs moved whole: padding too
    if whole is not None:
        padded = whole[0] * -(-whole[1] * (target.bits_of(side.dtype) or 0) // 8)
    if moved != per_part * len(parts) and (padded is None or moved != padded * len(parts)):
        raise fail.op(op, f"the commands move {moved} bytes; the tensor's live cells are {per_part * len(parts)} bytes")
