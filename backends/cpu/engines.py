"""The data-movement engines on cpu buffers: each handler reshapes the stream buffer
`(chip, cluster, slice, time, packet)` into the `x[slice, time, packet]` arrays of
`ir.switch.semantics` and calls it, so cpu and the VISA interpreter share one definition."""

from __future__ import annotations

import numpy as np

from ir.data_movement_ops import Switch, Transpose
from ir.switch.semantics import switch_data, transpose_data

from backends.cpu import compact_moves, layout, switch_rows
from backends.cpu.handlers import handles
from backends.cpu.lazy_rows import LazyRows

__all__ = ["transpose", "switch"]


@handles(Transpose)
def transpose(op: Transpose, buf: np.ndarray) -> np.ndarray:
    """Transpose Engine, slice by slice (padding rows stay zero, as every cpu buffer's)."""
    t, out_t = op.input.type, op.result.type
    spatial = layout.spatial_levels(t)
    if spatial != layout.spatial_levels(out_t):  # not slice for slice: every position
        x = buf.reshape(-1, t.time.size, t.packet.size)
        return transpose_data(x, op.params(), op.out_time.size).reshape(layout.shape_of(out_t))
    # the live slices only: a padding slice's stream is zeros and so is its transpose (a kernel
    # on 1/4 of the slices transposed 4x its cells; issue 61, drawn bf16 kernels read `k` first)
    rows = layout.rows_view(buf, t)
    x = rows.reshape(rows.shape[0], t.time.size, t.packet.size)
    out = transpose_data(x, op.params(), op.out_time.size)
    return layout.from_rows(out.reshape(out.shape[0], *layout.shape_of(out_t)[len(spatial):]), out_t)


@handles(Switch, lazy=True, compact=True, gathers=True)  # a broadcast gathers from a fetch not made yet
def switch(op: Switch, buf) -> np.ndarray | LazyRows:
    """Switch Engine, on each (chip, cluster)'s ring of slices. Padding positions of the
    output (a tile the engine may write over `#` don't-care) are zeroed, as in every buffer.
    A broadcast is held as its distinct rows (backends/cpu/switch_rows.py), gathered from
    its input's moves not made yet when they carry whole packets."""
    if not isinstance(buf, (np.ndarray, compact_moves.Pending)):
        buf = compact_moves.materialize(buf)
    copies = switch_rows.distinct(op, buf)
    if copies is not None:
        return copies
    buf = compact_moves.materialize(buf)
    t, out_t = op.input.type, op.result.type
    rings = buf.reshape(-1, t.slice.size, t.time.size, t.packet.size)
    out = None  # each ring written into the result as it comes (a stack of a list held the result twice)
    for k, ring in enumerate(rings):
        moved = switch_data(ring, t.slice, t.time, op.out_slice, op.out_time, op.config)
        if out is None:
            out = np.empty((len(rings), *moved.shape), moved.dtype)
        out[k] = moved
        del moved
    return layout.zero_padding_in_place(out.reshape(layout.shape_of(out_t)), out_t)  # `out` is this handler's own
