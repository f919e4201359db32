"""Runs of a tensor DMA that hold padding (rules DMA-4 and DMA-5 of `to_dm` / `to_hbm`).

A DMA never moves padding on its own: each loop moves live cells. Two shapes of padded
layout meet that rule in opposite ways. A run with padding between live cells (a padded
axis split into digits with another axis between them) has no strided loop at all, so it
is refused (`runs_with_padding`). A row whose live cells come first and whose padding the
source holds at the same places moves whole, padding included, in aligned units
(`padding_moves`; ir/rules/dma_tail.py widens the tail), as the reference does. Both
follow the lowering of tensor DMAs (tu_ops/dma_commands.py); the DMAs other ops make
(redistribute, gather, scatter, spm) are lowered otherwise and keep the plain `check_move`.
"""

from __future__ import annotations

from ir.diagnostic import Violation
from ir.mapping.factors import Factor, canon
from ir.mapping.sequence import sequence
from ir.rules.dma_tail import interior_padding, live_steps, merged_padding, padded_tail, tail_piece
from ir.types import DmType, HbmType

__all__ = ["DMA_DM_ALIGN", "joint", "padding_moves", "runs_with_padding"]

DMA_DM_ALIGN = 8
"""Byte alignment of DMA writes into DM (docs/machine/index.md)."""


def joint(t: HbmType | DmType) -> tuple[Factor, ...]:
    """The factor form of the joint mapping `[Chip, (Cluster, Slice,) Element]`, joined from the
    (cached) factor forms of the levels as `sequence` joins memory levels."""
    return tuple(canon([f for level in t.levels() for f in level.factors()]))


def runs_with_padding(src, dst) -> Violation | None:
    """DMA-4 for a memory side whose transfer loops (matched level by level, as the lowering
    does: tu_ops/dma_commands.py) hold one run with padding between live cells, such as
    `T # 12 / 4, P, T # 12 % 4` with |T| = 10 against another layout: a DMA moves padding only
    onto padding, and such a run is no strided loop. A run the other side holds with the same
    cells at the same places (the same layout, `SequenceResult.whole`) moves whole."""
    own, other = (dst, src) if isinstance(dst, DmType) or not isinstance(src, DmType) else (src, dst)
    found = sequence(list(other.levels()), list(own.levels()))
    if not found:
        return None
    for level in ((2, 3) if isinstance(own, DmType) else (1,)):
        piece = next((p for i, p in enumerate(found.pieces[level])
                      if interior_padding(p) and (level, i) not in found.whole), None)
        if piece is not None:
            side = "destination" if own is dst else "source"
            return Violation(
                "DMA-4", f"the {side} {own} has padding between the live cells of one run of the transfer, "
                         "and a DMA never moves padding",
                label=f"this run holds padding inside it: {piece.extent} cells, {live_steps(piece)} live before "
                      "the first padding",
                notes=("a padded axis split into digits with another axis between them leaves its padding "
                       "inside the run the transfer would move as one loop",),
                help="keep the digits of the padded axis next to each other in this layout, or pad it in whole "
                     "digits only (e.g. `T # 12` outermost); see `npu-opt explain DMA-4`")
    return None


def padding_moves(src, dst) -> bool:
    """Whether the destination's innermost run ends in padding that factors (`C4 # 8`: a pure
    padding piece over `C4`; `C3 # 8`: one over `C3 # 4`, `dma_tail.merged_padding`) and that
    the source pads the same way, so the DMA moves the padded row whole in aligned units
    (`dma_tail.padded_tail`), as the reference does."""
    found = sequence(joint(src), joint(dst))
    if not found or not found.pieces[0]:
        return False
    pieces, entries = merged_padding(found.pieces[0], found.levels[0])
    other = [e.stride for e in entries]
    tail = tail_piece(pieces, other)
    if tail is None:
        return False
    k, inner = tail
    piece = pieces[k]
    return padded_tail(piece, other[k], live_steps(piece), src, dst.dtype.bits, DMA_DM_ALIGN, inner) == piece.extent
