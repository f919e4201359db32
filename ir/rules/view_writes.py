"""Trace-time rules of writes into DM views (docs/views.md): a DMA write into DM starts on an
8-byte boundary (VIEW-13), a `memset` of 4-bit cells fills whole bytes (VIEW-14), and a
`begin` reads the slices of its own program (VIEW-15).

The DMA engine writes DM in 8-byte bank-width units (docs/machine/dma.md): a window of a DM
tensor written by a DMA must start at a multiple of 8 bytes of each slice's storage. A
slice offset moves by whole slices and a chip or cluster offset picks another DM, so only
the Element offset counts. A `memset` of 4-bit cells writes bytes: every byte it touches
must hold two live cells of the view. A feed reads each slice's own DM, so a `begin` over
a window shifted on the Chip, Cluster or Slice level would read other slices' data.
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.mapping.nodes import Mapping, Pad, PaddingKind
from ir.mapping.live import nibble_bytes
from ir.rules.dma import DMA_DM_ALIGN
from ir.words import a_an

__all__ = ["check_dm_write_align", "check_memset_bytes", "check_begin_window", "read_padded"]


def _read_pads(mp: Mapping) -> Mapping:
    """`mp` with every write padding (`#{!}`) read as `#`: the cells are the same."""
    if isinstance(mp, Pad):
        return Pad(_read_pads(mp.operand), mp.n, PaddingKind.TOP if mp.kind is PaddingKind.BOTTOM else mp.kind)
    changes: dict[str, Any] = {}
    for f in attrs.fields(type(mp)):
        v = getattr(mp, f.name)
        if isinstance(v, Mapping):
            changes[f.name] = _read_pads(v)
        elif isinstance(v, tuple) and v and all(isinstance(x, Mapping) for x in v):
            changes[f.name] = tuple(_read_pads(x) for x in v)
    return attrs.evolve(mp, **changes) if changes else mp


def read_padded(view: Any) -> Any:
    """A write view's type with its Chip and Cluster tiles read as read tiles: the DMA rules
    compare those levels cell for cell, and a tile's cells do not depend on whether the
    cells outside it are kept (`#{!}`) or not (`#`)."""
    levels = {"chip": _read_pads(view.chip)}
    if view.kind == "dm":
        levels["cluster"] = _read_pads(view.cluster)
    return attrs.evolve(view, **levels)


def check_dm_write_align(op: Any) -> Violation | None:
    """VIEW-13: a DMA into a DM window starts on an 8-byte boundary of the slice."""
    t = op.into.type
    if t.kind != "dm":
        return None
    start = op.offset[-1] * t.dtype.bits
    step = (getattr(op, "start_stride", None) or 0) * t.dtype.bits   # a runtime start's step
    if step % (8 * DMA_DM_ALIGN):
        return Violation("VIEW-13", f"each step of the runtime start moves the write into DM by {step / 8:g} bytes, "
                                    f"not a multiple of {DMA_DM_ALIGN} (the DMA engine writes DM in "
                                    f"{DMA_DM_ALIGN}-byte units)",
                         help="tile an axis whose step is a multiple of 8 bytes, or write into HBM")
    if start % (8 * DMA_DM_ALIGN) == 0:
        return None
    where = f"{start / 8:g}" if start % 8 else str(start // 8)
    return Violation("VIEW-13", f"the write into DM starts {where} bytes into each slice's storage, not on "
                                f"{a_an(DMA_DM_ALIGN)}-byte boundary (the DMA engine writes DM in {DMA_DM_ALIGN}-byte units)",
                     help=f"start the tile at an element offset that is a multiple of {DMA_DM_ALIGN} bytes, or "
                          "copy into a fresh tensor (`to_dm`) and use a view of that")


def check_memset_bytes(op: Any) -> Violation | None:
    """VIEW-14: a `memset` of 4-bit cells writes whole bytes of the tensor."""
    t = op.into.type
    if t.dtype.bits != 4 or nibble_bytes(op.view, op.offset[-1]) is not None:
        return None
    return Violation("VIEW-14", f"the memset of {t.dtype} cells writes half a byte: a byte it touches holds a cell "
                                "outside the view (the fill writes whole bytes, two 4-bit cells each)",
                     help="fill a view whose Element tile starts and ends on an even cell, or fill the whole "
                          "tensor and overwrite the rest")


def check_begin_window(offset: tuple[int, ...]) -> Violation | None:
    """VIEW-15: a `begin` over a DM view is not shifted on its Chip, Cluster or Slice level (its
    stream's cells would sit on other slices than the stream's type names)."""
    if not any(offset[:-1]):
        return None
    return Violation("VIEW-15", "`begin` reads a view tiled outside its Element level: a feed reads each slice's "
                                "own DM, so a view of other chips, clusters or slices cannot be fed",
                     help="tile the Element level only, or copy the tile into a tensor of its own (`to_dm`) and "
                          "begin over that")
