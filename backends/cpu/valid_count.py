"""The cpu backend of the sub context's valid-count packing (docs/machine/valid-count.md).

The packed commit keeps exactly the live cells of every slice's `(time; packet)` stream, in
stream order, and stores them back to back. It reads liveness from the mapping's cells;
the VISA interpreter instead counts with the chip's Valid Count Generator configuration,
so the two agree only when that configuration is right.
"""

from __future__ import annotations

import numpy as np

from ir.valid_count import live_cells, packed_rows
from ir.valid_count_ops import CommitPacked, CommitValidCountPack, sliced
from ir.vector.intra_reduce import mapping_live

from backends.cpu import layout
from backends.cpu.handlers import handles

__all__ = ["commit_valid_count_pack", "commit_packed"]


@handles(CommitValidCountPack)
def commit_valid_count_pack(op: CommitValidCountPack, buf: np.ndarray) -> np.ndarray:
    """The stream is unchanged; the packed commit after it drops the uncounted cells."""
    return buf


@handles(CommitPacked)
def commit_packed(op: CommitPacked, buf: np.ndarray) -> np.ndarray:
    """Every slice's live cells, back to back, as the new tensor's element."""
    t = op.input.type
    flat = buf.reshape(*buf.shape[:3], -1)
    if not sliced(t):
        keep = live_cells(t.time, t.packet).reshape(-1)
        return np.ascontiguousarray(flat[..., keep]).reshape(layout.shape_of(op.result.type))
    keep = mapping_live(t.slice, t.time, t.packet).reshape(t.slice.size, -1)   # each slice's own live cells
    rows = flat.reshape(-1, flat.shape[-1])
    keep = np.tile(keep, (rows.shape[0] // t.slice.size, 1))
    packed = packed_rows(rows, keep)
    out = np.zeros((rows.shape[0], op.result.type.element.size), buf.dtype)
    out[:, :packed.shape[1]] = packed
    return out.reshape(layout.shape_of(op.result.type))
