"""The data-movement engines on cpu buffers: each handler reshapes the stream buffer
`(chip, cluster, slice, time, packet)` into the `x[slice, time, packet]` arrays of
`ir.switch.semantics` and calls it, so cpu and the VISA interpreter share one definition."""

from __future__ import annotations

import numpy as np

from ir.engine_ops import Transpose
from ir.switch.semantics import transpose_data

from backends.cpu import layout

__all__ = ["transpose"]


def transpose(op: Transpose, buf: np.ndarray) -> np.ndarray:
    """Transpose Engine, slice by slice (padding rows stay zero, as every cpu buffer's)."""
    t = op.input.type
    x = buf.reshape(-1, t.time.size, t.packet.size)
    out = transpose_data(x, op.params(), op.out_time.size)
    return out.reshape(layout.shape_of(op.result.type))
