"""A Switch Engine broadcast held as its distinct rows (issue 61 item 2).

A broadcasting switch (BROADCAST1, BROADCAST01, a custom broadcast) writes the same
packets into several slices: `w by switch` placements hand every slice of a column the
same TRF rows. Written out, the result is a buffer of the machine's size, many times its
distinct data (a 256 KiB weight became a 4 MiB buffer, then a 4 MiB widened copy in the
contraction), and the contraction widened and multiplied every copy.

A switch moves whole packets and never looks at them, so which input packet each output
(slice, time) holds is found once per switch (`_packet_map`, by
`ir.switch.semantics.packet_map`: the engine's own data movement run on the packet numbers
of one ring, a number per packet, not per cell). Output slices with the same map
row hold the same packets. `distinct` then gathers the rows in use once (each (ring, map
row) met by a live output row, in the order they first appear), a padding row reads one
zero row, and returns a `LazyRows` whose `row_of` names, per spatial row, the distinct row
it holds: the moves after it keep the map, the contraction groups its products by it (as
a DMA's copies: backends/cpu/row_classes.py), every other consumer gets the full buffer,
bit for bit the eager switch's result.
"""

from __future__ import annotations

import math
import weakref

import attrs
import numpy as np

from ir.data_movement_ops import Switch
from ir.switch.semantics import packet_map

from backends.cpu import arena, compact_moves, layout
from backends.cpu.compact_moves import Pending
from backends.cpu.lazy_rows import LazyRows
from backends.cpu.lru import ByObject
from backends.cpu.row_classes import MIN_COPIES, identity
from backends.cpu.distinct import distinct_values

__all__ = ["distinct"]

_MAPS: ByObject[_Map] = ByObject()


class _Map:
    """One switch geometry's `_packet_map`, shared by every op of that geometry (an unrolled
    kernel has one switch op per tile, each the same map: issue 61, first-run memory)."""

    __slots__ = ("found", "__weakref__")

    def __init__(self, found: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        self.found = found


_SHARED: weakref.WeakValueDictionary[tuple, _Map] = weakref.WeakValueDictionary()  # alive while an op holds it


def _packet_map(op: Switch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(map, reps, cls) of `op` on one ring: map[s', t'] the input packet s * T + t that
    output slice s' holds at step t' (-1: none), `reps` one output slice per distinct map
    row, `cls[s']` the distinct map row of slice s'. Found once per op object, and made
    once per geometry (the input's slice and time, the output's, the configuration)."""
    found = _MAPS.get(op)
    if found is None:
        t = op.input.type
        key = (t.slice, t.time, op.out_slice, op.out_time, op.config)
        found = _SHARED.get(key)
        if found is None:
            moved = packet_map(t.slice, t.time, op.out_slice, op.out_time, op.config)
            _, reps, cls = np.unique(moved, axis=0, return_index=True, return_inverse=True)
            found = _SHARED.setdefault(key, _Map((moved, reps, cls.reshape(-1))))
        _MAPS.put(op, found)
    return found.found


@attrs.frozen(eq=False)
class _RowsPlan:
    """What `distinct` does to a buffer of `n_rings` rings of `op`'s input, found once:
    `source` the input packet of each cell packet of the rows in use (rows in use first,
    the padding row, if any, last), `blank` the packets among them no input packet fills,
    `pad` the padding cells of a row, `row_of` each spatial row's distinct row."""

    source: np.ndarray
    blank: np.ndarray
    pad: np.ndarray
    row_of: np.ndarray
    n_kept: int
    steps: int


_PLANS: ByObject[dict[int, _RowsPlan | None]] = ByObject()


def _rows_plan(op: Switch, n_rings: int) -> _RowsPlan | None:
    """The `_RowsPlan` of `op` on `n_rings` rings, or None when fewer than `MIN_COPIES` rows
    share each distinct one. Kept per op object and ring count: a later run replays it."""
    per_op = _PLANS.get(op) or _PLANS.put(op, {})
    if n_rings in per_op:
        return per_op[n_rings]
    t = op.input.type
    moved, reps, cls = _packet_map(op)
    n_out, steps = moved.shape
    ring_packets = t.slice.size * t.time.size
    n_rows = n_rings * n_out
    live = layout.live_rows(op.result.type)
    ring, within = np.divmod(live, n_out)
    keys = np.full(n_rows, -1, np.int64)  # (ring, map row) of every live output row; -1: a padding row
    keys[live] = ring * len(reps) + cls[within]
    kept, first, row_of = np.unique(keys, return_index=True, return_inverse=True)
    if len(kept) * MIN_COPIES > n_rows:
        per_op[n_rings] = None
        return None
    order = np.argsort(first)  # the distinct rows in the order they first appear, a padding row last
    if kept[0] < 0:
        order = np.concatenate([order[order != 0], [0]])
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    row_of = rank[row_of.reshape(-1)].astype(np.intp)
    row_of.setflags(write=False)
    ring, picked = np.divmod(kept[order][kept[order] >= 0], len(reps))
    index = moved[reps[picked]]  # (rows in use, steps): the input packet of every cell
    source = (ring[:, None] * ring_packets + np.maximum(index, 0)).reshape(-1)
    blank = np.flatnonzero(index.reshape(-1) < 0)
    pad = np.flatnonzero(layout.local_pad(layout.local_levels(op.result.type)))
    per_op[n_rings] = _RowsPlan(source, blank, pad, row_of, len(kept), steps)
    return per_op[n_rings]


_FOLDS: ByObject[dict] = ByObject()


def _folded(op: Switch, value: Pending, plan: _RowsPlan) -> tuple[np.ndarray, np.ndarray] | None:
    """(the base packet each used packet reads, the blank ones) of a switch whose input is
    `value`, moves not made yet (a fetch), when those moves carry whole packets: each
    packet a run of cells of a base row starting at a multiple of the packet size. The
    switch then gathers from the base, the fetch's output never written. Kept per op,
    chain and base shape; None when the packets are not whole."""
    per_op = _FOLDS.get(op) or _FOLDS.put(op, {})
    key = (value.chain, value.base.shape)
    if key not in per_op:
        per_op[key] = _fold(op, value, plan)
    return per_op[key]


def _fold(op: Switch, value: Pending, plan: _RowsPlan) -> tuple[np.ndarray, np.ndarray] | None:
    t = op.input.type
    steps, size = t.time.size, t.packet.size
    moved = compact_moves.plan_of(value)
    cells = np.asarray(moved.index, np.int64).reshape(steps, size)
    live = np.ones((steps, size), bool) if moved.live is None else moved.live.reshape(steps, size)
    n_base = int(np.prod(value.base.shape[1:]))
    whole = (live.all(axis=1) | ~live.any(axis=1)).all() and (np.diff(cells, axis=1) == 1).all()
    if not whole or n_base % size or (cells[:, 0] % size).any():
        return None
    rank = np.full(layout.n_rows(t), -1, np.int64)
    rank[layout.live_rows(t)] = np.arange(len(layout.live_rows(t)))
    row, step = np.divmod(plan.source, steps)  # the input's spatial row and step of each used packet
    base_row = rank[row]
    blank = (base_row < 0) | ~live[step, 0]
    source = np.where(blank, 0, (np.maximum(base_row, 0) * n_base + cells[step, 0]) // size)
    return source, distinct_values(np.concatenate((plan.blank, np.flatnonzero(blank))))


def distinct(op: Switch, buf: np.ndarray | Pending) -> LazyRows | None:
    """The switch `op` of `buf` as its distinct rows and their map (the module docstring),
    or None when fewer than `MIN_COPIES` rows share each distinct one (then the engine
    writes the buffer). The rows are one gather of the input's packets by a plan found at
    the op's first run (`_rows_plan`); of a `Pending` input's base rows when its moves
    carry whole packets (`_folded`)."""
    t = op.input.type
    ring_cells = t.slice.size * t.time.size * t.packet.size
    n_rings = math.prod(buf.shape) // ring_cells
    plan = _rows_plan(op, n_rings)
    if plan is None:
        return None
    source, blank, packets = plan.source, plan.blank, None
    if isinstance(buf, Pending):
        found = _folded(op, buf, plan)
        if found is not None:
            (source, blank), packets = found, np.ascontiguousarray(buf.base).reshape(-1, t.packet.size)
        else:
            buf = compact_moves.materialize(buf)
    if packets is None:
        packets = np.ascontiguousarray(buf).reshape(-1, t.packet.size)
    rows = arena.empty((plan.n_kept * plan.steps, t.packet.size), buf.dtype)  # the run's scratch: no fresh pages
    used = len(source)
    np.take(packets, source, axis=0, out=rows[:used], mode="clip")  # valid indices: no buffered copy
    rows[used:] = 0  # the padding row
    rows[blank] = 0
    n_cells = plan.steps * t.packet.size
    cells = rows.reshape(plan.n_kept, n_cells)
    if plan.pad.size:  # padding cells of a row: zero, as in every buffer
        cells[:, plan.pad] = 0
    return LazyRows(cells, identity(n_cells, buf.dtype.itemsize), n_cells, layout.shape_of(op.result.type),
                    plan.row_of)
