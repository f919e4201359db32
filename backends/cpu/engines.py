"""The data-movement engines on cpu buffers: each handler reshapes the stream buffer
`(chip, cluster, slice, time, packet)` into the `x[slice, time, packet]` arrays of
`ir.switch.semantics` and calls it, so cpu and the VISA interpreter share one definition.

A switch that broadcasts (BROADCAST1 and the like copy each input slice's packets into
several output slices) is held as its distinct rows (a `LazyRows` with `row_of`,
backends/cpu/lazy_rows.py): the same semantics run once on packet numbers instead of
packets (`_packet_map`) say which input packet every output (slice, time) holds, output
slices holding the same packets are one row, and padding rows read a zero row. The moves
after it keep the map and the contraction reads the distinct rows (issue 61: a 256 KiB
weight broadcast to every slice was a 4 MiB buffer, then a 4 MiB widened copy)."""

from __future__ import annotations

import numpy as np

from ir.data_movement_ops import Switch, Transpose
from ir.switch.semantics import switch_data, transpose_data

from backends.cpu import layout, row_classes
from backends.cpu.handlers import handles
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.lru import ByObject

__all__ = ["transpose", "switch"]


@handles(Transpose)
def transpose(op: Transpose, buf: np.ndarray) -> np.ndarray:
    """Transpose Engine, slice by slice (padding rows stay zero, as every cpu buffer's)."""
    t = op.input.type
    x = buf.reshape(-1, t.time.size, t.packet.size)
    out = transpose_data(x, op.params(), op.out_time.size)
    return out.reshape(layout.shape_of(op.result.type))


_MAPS: ByObject[tuple[np.ndarray, np.ndarray, np.ndarray]] = ByObject()


def _packet_map(op: Switch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(map, reps, cls) of a switch on one ring: map[s', t'] the input packet (s * T + t)
    output slice s' holds at step t' (-1: none), `reps` one output slice per distinct row
    of the map, `cls[s']` the distinct row of slice s'. Found once per op object."""
    found = _MAPS.get(op)
    if found is None:
        t = op.input.type
        ids = np.arange(t.slice.size * t.time.size, dtype=np.int64).reshape(t.slice.size, t.time.size, 1)
        moved = switch_data(ids, t.slice, t.time, op.out_slice, op.out_time, op.config, fill=-1)[..., 0]
        _, reps, cls = np.unique(moved, axis=0, return_index=True, return_inverse=True)
        found = _MAPS.put(op, (np.ascontiguousarray(moved), reps, cls.reshape(-1)))
    return found


def _distinct(op: Switch, buf: np.ndarray) -> LazyRows | None:
    """The switch's result as its distinct rows (the module docstring), or None when fewer
    than `row_classes.MIN_COPIES` rows share each distinct one."""
    t, out_t = op.input.type, op.result.type
    moved, reps, cls = _packet_map(op)
    n_out, steps = moved.shape
    n_rings = buf.size // (t.slice.size * t.time.size * t.packet.size)
    live = layout.live_rows(out_t)
    ring, within = np.divmod(live, n_out)
    pairs = ring * len(reps) + cls[within]  # (ring, distinct row) of every live output row
    used, row_of_live = np.unique(pairs, return_inverse=True)
    padding = len(live) < n_rings * n_out
    if (len(used) + padding) * row_classes.MIN_COPIES > n_rings * n_out:
        return None
    packets = buf.reshape(n_rings * t.slice.size * t.time.size, t.packet.size)
    ring, picked = np.divmod(used, len(reps))
    index = moved[reps[picked]]  # (used, steps)
    base = np.empty((len(used) + padding, steps, t.packet.size), buf.dtype)
    np.take(packets, ring[:, None] * (t.slice.size * t.time.size) + np.maximum(index, 0), axis=0,
            out=base[:len(used)])
    base[:len(used)][index < 0] = 0
    base[len(used):] = 0
    n_cells = steps * t.packet.size
    cells = base.reshape(len(base), n_cells)
    local = layout.local_pad(layout.local_levels(out_t))
    if local.any():
        cells[:, local] = 0
    row_of = np.full(n_rings * n_out, len(used), np.intp)  # padding rows: the zero row
    row_of[live] = row_of_live.reshape(-1)
    row_of.setflags(write=False)
    return LazyRows(cells, row_classes.identity(n_cells, buf.itemsize), n_cells, layout.shape_of(out_t), row_of)


@handles(Switch)
def switch(op: Switch, buf: np.ndarray) -> np.ndarray | LazyRows:
    """Switch Engine, on each (chip, cluster)'s ring of slices. Padding positions of the
    output (a tile the engine may write over `#` don't-care) are zeroed, as in every buffer.
    A broadcast's result is its distinct rows (the module docstring)."""
    t, out_t = op.input.type, op.result.type
    distinct = _distinct(op, buf)
    if distinct is not None:
        return distinct
    rings = buf.reshape(-1, t.slice.size, t.time.size, t.packet.size)
    out = None  # each ring written into the result as it comes (a stack of a list held the result twice)
    for k, ring in enumerate(rings):
        moved = switch_data(ring, t.slice, t.time, op.out_slice, op.out_time, op.config)
        if out is None:
            out = np.empty((len(rings), *moved.shape), moved.dtype)
        out[k] = moved
        del moved
    return layout.zero_padding_in_place(out.reshape(layout.shape_of(out_t)), out_t)  # `out` is this handler's own
