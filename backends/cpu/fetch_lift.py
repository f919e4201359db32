"""The cpu backend of the fetch lifts (docs/machine/fetch-lift.md): each (chip, cluster, slice)
row reads its own copy. An output cell takes the cell of its row's input (time; packet) whose
logical index agrees on every digit the input time and packet hold; the lifted digits come
from the output's placement. Matched by logical keys (backends/cpu/moves.py), not by the
read bases the VISA interpreter walks."""

from __future__ import annotations

import numpy as np

from ir.errors import InternalError
from ir.fetch_lift_ops import FetchChipLift, FetchClusterLift, FetchLift, FetchSliceLift

from backends.cpu import layout, moves
from backends.cpu.handlers import handles

__all__ = ["fetch_lift"]


@handles(FetchChipLift, FetchClusterLift, FetchSliceLift)
def fetch_lift(op: FetchLift, buf: np.ndarray) -> np.ndarray:
    """Per row r and output cell q: the input cell of row r with q's key."""
    t, out_t = op.input.type, op.result.type
    src_local = layout.local_levels(t)
    space = moves.key_space(moves.joint_frag(src_local))  # the levels' own past the table limit
    where = moves._where(space, src_local, narrow=False)
    dst_keys, dst_pad = moves.logical_keys((*layout.spatial_levels(out_t), *layout.local_levels(out_t)), space)
    n_rows = layout.n_rows(out_t)
    index = where[dst_keys].reshape(n_rows, -1)
    pad = dst_pad.reshape(n_rows, -1)
    if np.any(~pad & (index < 0)):
        raise InternalError(f"cpu {op.STAGE}: a live output cell has no input cell in its row")
    rows = buf.reshape(n_rows, -1)
    out = np.take_along_axis(rows, np.where(pad, 0, index), axis=1)
    out = np.where(pad, np.zeros((), out.dtype), out)
    return out.reshape(layout.shape_of(out_t))
