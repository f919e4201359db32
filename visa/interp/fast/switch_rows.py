"""A Switch Engine broadcast held as its distinct rows (issue 61 item 2), a speed shortcut.

A broadcasting switch (BROADCAST1, BROADCAST01, a custom broadcast) hands several output
slices the same packets: the `a by switch` and `w by switch` placements. Written out
(`visa.interp.switch.run_switch`), its result is the ring of every slice, padding ones
included, then the live rows copied out of it: on a bf16 GEMM 64 MiB and 16 MiB of copies a
run, where 2 MiB differ (issue 61: 12.5 ms of a 44 ms run; 1.2 s of 1.5 s on another).

A switch moves whole packets and never looks at them, so which input packet each output
(slice, step) holds is found once per record (`_plan`): `ir.switch.semantics.packet_map`,
the engine's own data movement run on the packet numbers of one ring, as the cpu backend
finds it. Output rows of one (chip, cluster) whose map rows are equal hold the same packets;
the first of them is stored, by one gather of the input's packets, and the others name it
(`held`). `switch_rows` returns the stream with only those rows stored; the feed hands it on
as a sparse `Repeated` (visa/interp/fast/repeated.py): the compiled float contraction
reads each stored row in place of its copies, every other reader gets it written out
(`Repeated.materialize`), the same bytes as the written switch.

Held only when at least two rows share each stored one on average; otherwise (and for
streams of other shapes) the plain switch runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.switch.semantics import packet_map
from tu_ops.feed_lift import fetched_type
from visa.interp.rows import Rows
from visa.interp.shortcuts import per_record, register
from visa.interp.values import pad_mask

__all__ = ["switch_rows"]

MIN_COPIES = 2
"""The fewest output rows per stored row (on average) for the switch to be held by its rows."""


def _packet_map(route: Any, fetch: Any) -> np.ndarray:
    """map[s', t']: the input packet `s * T + t` (slice s, step t of one ring) that output
    slice s' holds at step t', -1 where it holds none (a custom broadcast's empty slots) or
    where the switched Time is padding (those steps are zero)."""
    moved = packet_map(fetch.slice, fetch.time, route.out_slice, route.out_time, route.variant())
    moved[:, pad_mask(route.out_time)] = -1
    return moved


@per_record
def _plan(route: Any, input_type: Any, lift: Any,
          rows: Rows) -> tuple[Rows, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None:
    """(the output rows, each one's stored row `held`, the stored rows, the input packet of
    every step of each stored row as an index into the input rows' packets (-1: zero), each
    step's first step holding the same packets in every row, None when no two do) of the
    switch `route` of a feed (its `input_type` and `lift`: what a feed tiled at a runtime
    start keeps as it moves) on a stream living on `rows`; None when too few rows repeat."""
    fetch = fetched_type(input_type, lift)
    moved = _packet_map(route, fetch)
    _, cls = np.unique(moved, axis=0, return_inverse=True)   # slices with equal map rows hold equal packets
    cls = cls.reshape(-1)
    out_rows = Rows((fetch.chip, fetch.cluster, route.out_slice))
    held = np.empty(out_rows.count, np.int64)
    steps = fetch.time.size
    inputs = {key: (sel, slices) for key, sel, slices, _ in rows.slice_groups()}
    sources = []
    for key, sel in out_rows.groups():
        _, first, inverse = np.unique(cls[out_rows.slice[sel]], return_index=True, return_inverse=True)
        held[sel] = sel[first][inverse.reshape(-1)]
        row_of = np.full(fetch.slice.size, -1, np.int64)   # each input slice's row among the stream's, -1: none
        if key in inputs:
            row_of[inputs[key][1]] = inputs[key][0]
        index = moved[out_rows.slice[sel[np.sort(first)]]]
        slice_, step = np.divmod(np.maximum(index, 0), steps)
        source = row_of[slice_]
        sources.append(np.where((index < 0) | (source < 0), -1, source * steps + step))
    stored = np.flatnonzero(held == np.arange(out_rows.count))
    if stored.size * MIN_COPIES > out_rows.count:
        return None
    source = np.concatenate(sources)
    _, first, inverse = np.unique(source, axis=1, return_index=True, return_inverse=True)
    alias = first[inverse.reshape(-1)] if first.size < source.shape[1] else None   # steps holding equal packets
    return out_rows, held, stored, source, alias


@register("switch_rows")
def switch_rows(op: Any, values: np.ndarray, rows: Rows,
                scratch: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, Rows] | None:
    """The switch of `op` on `values` (rows, steps, packet elements) living on `rows`, with
    only its distinct rows stored: (the switched stream (output rows, switched steps,
    elements) of which only the rows `held` names are written, `held`, each step's first
    step with the same packets (None: none repeats), the output rows), or None (the plain
    switch runs). `scratch(shape, dtype)` gives the run an array to fill."""
    fetch = op.fetched_type()
    if values.ndim != 3 or values.shape[1] != fetch.time.size or op.switch.out_slice.size != fetch.slice.size:
        return None
    try:
        plan = _plan(op.switch, op.input_type, op.lift, rows)
    except (ValueError, TypeError, IndexError):   # the plain switch reports what it cannot route
        return None
    if plan is None:
        return None
    out_rows, held, stored, source, alias = plan
    packets = np.ascontiguousarray(values).reshape(-1, values.shape[2])
    out = scratch((out_rows.count, source.shape[1], values.shape[2]), values.dtype)
    for row, index in zip(stored.tolist(), source):
        np.take(packets, index, axis=0, out=out[row], mode="clip")   # valid indices (-1 zeroed below): unbuffered
    blank = source < 0
    if blank.any():
        for row, empty in zip(stored.tolist(), blank):
            out[row, empty] = 0
    mask = pad_mask(op.switch.out_time, fetch.packet)
    if mask.any():
        for row in stored.tolist():
            np.copyto(out[row], values.dtype.type(0), where=mask)
    return out, held, alias, out_rows
