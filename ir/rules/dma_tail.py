"""The padded tail of a DMA into DM (rule DMA-5 and the lowering): a ragged piece (`PC # 8`, or
the `[A, B] # 16` of a padded group of digits) whose live run is not a whole number of DM write
units is transferred with its padding.

A DMA moves the live run of a ragged piece only (padding is not transferred). When that
piece is the innermost of the destination element and its live run is not a multiple
of the DM write width (8 bytes), the packet would be unaligned; the reference then
strides the padded packet instead (its `padded_tail_alignment` kernel: an i32 `PC = 5`
padded to 8 on both sides). That is exact only when the source holds padding at the
same places, so the padded cells copied are padding (zero) on both sides; a dense source
(the next row's data right after the live run) keeps the live run.

The ragged piece is the innermost one (`PC # 8`), or it holds whole digits inside it: `[A, B, C] #
32` with |A B C| = 30 factors as a ragged piece of 15 live steps over `[A, B]` times the 2 cells
of `C`, and the tail widens the ragged piece, so the packet is the group's 32 padded cells
(`tail_piece` finds it; the digits inside must be contiguous on both sides). A padded run
that factors (`C4 # 8`: a pure padding piece of 2 steps, its cell 0 live, over the 4 cells of
`C4`) widens the same way: the book's sequencer kernels move such i8 rows whole.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.diagnostic import Violation
from ir.mapping.cells import LIVE, Padding
from ir.mapping.factors import AxisFactor, PaddingFactor, RaggedFactor
from ir.mapping.nodes import pair_all
from ir.rules.dma_text import factor_text

__all__ = ["padded_tail", "live_steps", "interior_padding", "merged_padding", "check_padded_tail", "tail_piece",
           "live_run"]


def tail_piece(pieces: Any, other_strides: Any) -> tuple[int, int] | None:
    """(index, cells inside it) of the piece a padded tail may widen: the innermost ragged or
    pure padding piece of `pieces` (a destination's pieces, outer first) when only whole axis digits lie
    inside it, contiguous on the destination and, by `other_strides` (the source's joint cell
    stride per piece), on the source; None when there is none."""
    inner = 1
    for k in range(len(pieces) - 1, -1, -1):
        piece = pieces[k]
        if isinstance(piece, (RaggedFactor, PaddingFactor)):
            return (k, inner) if inner == 1 or other_strides[k] == inner else None
        if not isinstance(piece, AxisFactor) or other_strides[k] != inner:
            return None
        inner *= piece.extent
    return None


def merged_padding(pieces: Any, entries: Any) -> tuple[tuple, tuple]:
    """`pieces` and their `entries` (the other side's loops, `ir.mapping.ops.Entry`) with a pure
    padding piece directly outside a ragged one that holds a live run then padding merged into
    one ragged piece, when the other side steps over the pair contiguously: `C3 # 8` with
    |C3| = 3 factors as 2 padding steps over `C3 # 4`, and reads as the row it is, 3 live cells
    then 5 of padding, whose tail can widen (`tail_piece`)."""
    out_p, out_e = list(pieces), list(entries)
    for k in range(len(out_p) - 1, 0, -1):
        inner, outer = out_p[k], out_p[k - 1]
        if isinstance(inner, RaggedFactor) and isinstance(outer, PaddingFactor) and not interior_padding(inner) \
                and out_e[k - 1].stride == inner.extent * out_e[k].stride:
            pad = (Padding(outer.kind),) * (inner.extent * (outer.extent - 1))
            out_p[k - 1:k + 1] = [RaggedFactor(inner.cells + pad)]
            out_e[k - 1:k + 1] = [attrs.evolve(out_e[k], size=inner.extent * outer.extent)]
    return tuple(out_p), tuple(out_e)


def padded_tail(piece: Any, other_stride: int, live: int, other_t: Any, bits: int, align: int,
                inner: int = 1) -> int:
    """The steps to transfer of the destination piece `piece` (`tail_piece`, `inner` cells per
    step): its padded extent when its `live` run is not `align`-byte aligned and every padded
    step reads padding cells of the source (`other_t`, `other_stride` joint cells per step),
    else `live`."""
    row = 8 * align
    if not isinstance(piece, (RaggedFactor, PaddingFactor)) or live == piece.extent or (live * inner * bits) % row == 0:
        return live
    if (piece.extent * inner * bits) % row:
        return live
    joint = pair_all(list(other_t.levels()))
    steps = np.arange(live, piece.extent, dtype=np.int64) * other_stride
    positions = (steps[:, None] + np.arange(inner, dtype=np.int64)[None, :]).reshape(-1)
    if positions.max(initial=0) >= joint.size:
        return live
    status = joint.cells(positions).status
    return piece.extent if bool(np.all(status != LIVE)) else live


def live_steps(piece: Any) -> int:
    """The leading live steps of a ragged piece (`X # p`: |X|), 1 of a pure padding piece (its
    cell 0), else its extent."""
    if isinstance(piece, PaddingFactor):
        return 1
    if not isinstance(piece, RaggedFactor):
        return piece.extent

    live = [not isinstance(c, Padding) for c in piece.cells]
    return live.index(False) if False in live else len(live)


def interior_padding(piece: Any) -> bool:
    """Whether a ragged piece holds a live cell after a padding cell: a run a DMA, which
    never moves padding, cannot transfer as one strided loop."""
    if not isinstance(piece, RaggedFactor):
        return False
    return any(not isinstance(c, Padding) for c in piece.cells[live_steps(piece):])


def check_padded_tail(pieces: Any, other_strides: Any, src: Any, dst: Any, align: int) -> Violation | None:
    """DMA-5 for the tail of a DMA into DM (`pieces`, `other_strides`: the destination's joint
    pieces and the source's strides for them, `tail_piece`): a ragged piece whose live run is not
    `align`-byte aligned moves with its padding, so the source must hold padding at those cells
    too (the lowering then strides the padded packet, `padded_tail`)."""
    found = tail_piece(pieces, other_strides)
    if found is None:
        return None
    k, inner = found
    piece, bits = pieces[k], dst.dtype.bits
    live = live_steps(piece)
    if (live * inner * bits) % (8 * align) == 0:
        return None
    if padded_tail(piece, other_strides[k], live, src, bits, align, inner) != live:
        return None
    live *= inner
    shown = f"{live * bits / 8:g}"
    digits = f"`{factor_text(piece)}`" if inner == 1 else f"(a padded group) of `{dst.element}`"
    return Violation(
        "DMA-5", f"a DMA into DM writes whole {align}-byte units, but the innermost destination digits "
                 f"{digits} hold {live} live cell(s) = {shown} byte(s) per row",
        label=f"{shown} byte(s) per row, not a multiple of {align}",
        notes=(f"the row can move with its padding only when the source pads it the same way; the source "
               f"{src} holds data right after the live cells",),
        help="declare the same padding on the source (e.g. an HBM element with the same `X # n` innermost), "
             "or pad the destination row to a live size that is a multiple of 8 bytes")


def live_run(dst, burst: int) -> int:
    """Cells of a burst that are actually transferred: padding is never moved (docs/ci.md
    1.2), so the run stops at the innermost pure-padding factor inside the burst, or at the
    first padding cell of the burst: `R # 8` with |R| = 6 is a ragged piece over `R % 2`, and
    only its 6 live cells move. An innermost ragged piece moves whole (its padded tail is
    widened into the packet, `check_padded_tail`)."""
    run = 1
    factors = dst.element.factors()
    for f in reversed(factors):
        if run >= burst or isinstance(f, PaddingFactor):
            break
        run *= f.extent
    run = min(run, burst)
    if factors and isinstance(factors[-1], RaggedFactor):
        return run
    group = _padded_group(factors)
    if group is not None and run >= group:
        return run
    dead = _first_dead(factors)
    return dead if dead is not None and 0 < dead < run else run


def _first_dead(factors) -> int | None:
    """The first position of an element that holds no cell, from its factor form (a cell is
    live when every factor's digit is: a pure padding factor's digit 0, a ragged piece's
    live rows, any digit of another factor), so its cost never grows with the axes: the
    smallest dead digit of each factor at that factor's stride, the other digits 0."""
    out, stride = None, 1
    for f in reversed(factors):
        if isinstance(f, PaddingFactor) and f.extent > 1:
            digit = 1
        elif isinstance(f, RaggedFactor):
            rows = np.flatnonzero(f.matrix[:, 0] != LIVE)
            digit = int(rows[0]) if rows.size else None
        else:
            digit = None
        if digit is not None and (out is None or digit * stride < out):
            out = digit * stride
        stride *= f.extent
    return out


def _padded_group(factors) -> int | None:
    """Cells of the innermost padded group `[A, B] # n` of an element (a ragged piece with only
    whole axis digits inside it, `dma_tail.tail_piece`), which moves whole; None without one."""
    inner = 1
    for f in reversed(factors):
        if isinstance(f, RaggedFactor):
            return inner * f.extent
        if not isinstance(f, AxisFactor):
            return None
        inner *= f.extent
    return None
