"""Tiles at a runtime start (docs/runtime.md#runtime-tile-starts): the reference's
`v.tile::<I, LEN, E>(i)` with `i` a `usize` read from an `HbmScalar`.

The tile's mapping, length and index are checked while tracing as for a tile at start 0
(VIEW-1 ... VIEW-3); what the start adds is one number per tile: the cells one step of
the start moves the window (`stride`), and the largest start that keeps the window inside
the index's values (`limit = extent - length`). The device adds `start * stride` cells to
the window's offset when the DMA runs; a start above `limit` stops the run with
RUNTIME-10 (the reference's execution rejects it), on the cpu backend and in the VISA
interpreter alike (`ir.runtime_types.checked_start`).
"""

from __future__ import annotations

from typing import Any

from ir.diagnostic import Violation
from ir.mapping.nodes import Mapping
from ir.rules.views import tile_extent, tile_offset

__all__ = ["runtime_tile_step", "check_runtime_start", "START_DTYPE"]

START_DTYPE = "usize"
"""The type of a runtime tile start: the reference's `tile` takes `usize` (cast others)."""


def runtime_tile_step(level: Mapping, index: Mapping, length: Any, wanted: Mapping,
                      writable: bool) -> tuple[int, int] | Violation:
    """(cells per step of the start, largest start) of a tile of `level` at a runtime start,
    or the VIEW rule the tile breaks at start 0."""
    at_zero = tile_offset(level, index, length, wanted, 0, writable)
    if isinstance(at_zero, Violation):
        return at_zero
    limit = tile_extent(index) - length
    if limit == 0:
        return 0, 0
    stride = tile_offset(level, index, length, wanted, 1, writable)
    return (stride, limit) if isinstance(stride, int) else stride


def check_runtime_start(op: Any) -> Violation | None:
    """RUNTIME-9: a window's runtime start is a `usize` scalar with both its stride and limit."""
    parts = (op.start, op.start_stride, op.start_limit)
    if all(p is None for p in parts):
        return None
    if any(p is None for p in parts):
        return Violation("RUNTIME-9", "a runtime tile start needs its scalar, start_stride and start_limit")
    dtype = getattr(op.start.type, "dtype", None)
    if getattr(op.start.type, "kind", None) != "scalar" or getattr(dtype, "name", None) != START_DTYPE:
        return Violation("RUNTIME-9", f"a runtime tile start is a scalar[usize], not {op.start.type}")
    if op.start_stride < 0 or op.start_limit < 0:
        return Violation("RUNTIME-9", "start_stride and start_limit must not be negative")
    return None
