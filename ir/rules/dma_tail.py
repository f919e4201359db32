"""The padded tail of a DMA into DM (rule DMA-5 and the lowering): a ragged innermost piece (`PC # 8`) whose live run is
not a whole number of DM write units is transferred with its padding.

A DMA moves the live run of a ragged piece only (padding is not transferred). When that
piece is the innermost of the destination element and its live run is not a multiple
of the DM write width (8 bytes), the packet would be unaligned; the reference then
strides the padded packet instead (its `padded_tail_alignment` kernel: an i32 `PC = 5`
padded to 8 on both sides). That is exact only when the source holds padding at the
same places, so the padded cells copied are padding (zero) on both sides; a dense source
(the next row's data right after the live run) keeps the live run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.diagnostic import Violation
from ir.mapping.cells import LIVE
from ir.mapping.factors import RaggedFactor
from ir.mapping.nodes import pair_all

__all__ = ["padded_tail", "live_steps", "check_padded_tail"]


def padded_tail(piece: Any, other_stride: int, live: int, other_t: Any, bits: int, align: int) -> int:
    """The steps to transfer of the innermost destination piece `piece`: its padded extent
    when its `live` run is not `align`-byte aligned and every padded step reads a padding
    cell of the source (`other_t`, `other_stride` joint cells per step), else `live`."""
    if not isinstance(piece, RaggedFactor) or live == piece.extent or (live * bits) % (8 * align) == 0:
        return live
    if (piece.extent * bits) % (8 * align):
        return live
    joint = pair_all(list(other_t.levels()))
    positions = np.arange(live, piece.extent, dtype=np.int64) * other_stride
    if positions.max(initial=0) >= joint.size:
        return live
    status = joint.cells(positions).status
    return piece.extent if bool(np.all(status != LIVE)) else live


def live_steps(piece: Any) -> int:
    """The leading live steps of a ragged piece (`X # p`: |X|), else its extent."""
    if not isinstance(piece, RaggedFactor):
        return piece.extent
    from ir.mapping.cells import Padding

    live = [not isinstance(c, Padding) for c in piece.cells]
    return live.index(False) if False in live else len(live)


def check_padded_tail(piece: Any, other_stride: int, src: Any, dst: Any, align: int) -> Violation | None:
    """DMA-5 for the innermost destination piece of a DMA into DM: a ragged piece whose live
    run is not `align`-byte aligned moves with its padding, so the source must hold padding
    at those cells too (the lowering then strides the padded packet, `padded_tail`)."""
    bits = dst.dtype.bits
    live = live_steps(piece)
    if not isinstance(piece, RaggedFactor) or (live * bits) % (8 * align) == 0:
        return None
    if padded_tail(piece, other_stride, live, src, bits, align) != live:
        return None
    from ir.rules.dma import factor_text  # late: ir.rules.dma imports this module

    shown = f"{live * bits / 8:g}"
    return Violation(
        "DMA-5", f"a DMA into DM writes whole {align}-byte units, but the innermost destination digits "
                 f"`{factor_text(piece)}` hold {live} live cell(s) = {shown} byte(s) per row",
        label=f"{shown} byte(s) per row, not a multiple of {align}",
        notes=(f"the row can move with its padding only when the source pads it the same way; the source "
               f"{src} holds data right after the live cells",),
        help="declare the same padding on the source (e.g. an HBM element with the same `X # n` innermost), "
             "or pad the destination row to a live size that is a multiple of 8 bytes")
