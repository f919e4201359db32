"""The Switch Engine stage of a `feed_buffer` record (its `switch=` field, docs/machine/switch.md).

Between the conversions and Collect, the engine moves each (chip, cluster) ring's packets
between slices. The interpreter lays every ring out as `x[slice, time, packet]` over the
input Slice (slices the program's space marks as padding hold zeros), applies the one data
movement both backends share (`ir.switch.semantics.switch_data`), and keeps the rows that
are live in the switch's `out_slice`: from here on the program runs on those rows.
Output positions that the switched Time marks as padding are zero. (With the speed
machinery on, a broadcast is held by its distinct rows instead, `feed._switch_rows`: the
same values, written out for any reader that asks.)

The `inter_slice_reduce` record lays each (chip, cluster) ring out the same way (slices the
program does not run hold zeros and are padding of the input, so never read) and folds it
by `ir.vector.inter_reduce` (the fold both backends share); the program runs on the rows
live in `out_slice` from here on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.switch.semantics import switch_data
from ir.vector.inter_reduce import reduce_ring
from visa.interp.errors import InterpError, check
from visa.interp.rows import Rows
from visa.interp.steps import ProgramState, executes
from visa.interp.values import pad_mask, value_dtype, zero_padding

__all__ = ["run_switch"]


def run_switch(op: Any, values: np.ndarray, rows: Rows) -> tuple[np.ndarray, Rows]:
    """The switched stream of a feed (rows of `out_slice`, switched time, packet) and its rows."""
    route, fetch = op.switch, op.fetched_type()  # after the fetch lifts
    try:
        config = route.variant()
    except (TypeError, ValueError) as e:
        raise InterpError(f"switch config: {e}", op) from None
    in_slice, steps = fetch.slice, values.shape[1]
    check(steps == fetch.time.size, f"the switch reads {steps} steps, the fetch stream has {fetch.time.size}", op)
    check(route.out_slice.size == in_slice.size,
          f"the switch keeps {in_slice.size} slices, out_slice has {route.out_slice.size}", op)
    out_rows = Rows((fetch.chip, fetch.cluster, route.out_slice))
    out_groups = list(out_rows.groups())
    out = None
    groups = {key: (sel, slices, run) for key, sel, slices, run in rows.slice_groups()}
    for key, sel_out in out_groups:
        ring = _ring(values, groups.get(key), in_slice.size)
        try:
            moved = switch_data(ring, in_slice, fetch.time, route.out_slice, route.out_time, config)
        except (ValueError, TypeError, IndexError) as e:
            raise InterpError(f"the switch cannot route this stream: {e}", op) from None
        check(moved.shape[1] == route.out_time.size,
              f"the switch gives {moved.shape[1]} steps, out_time has {route.out_time.size}", op)
        kept = out_rows.slice[sel_out]
        if len(out_groups) == 1 and moved.base is None and np.array_equal(kept, np.arange(moved.shape[0])):
            out = moved        # every slice of the one ring, in order: the switch's own new array
            continue
        if out is None:
            out = np.zeros((out_rows.count, route.out_time.size, *values.shape[2:]), values.dtype)
        out[sel_out] = moved[kept]
    if out is None:
        out = np.zeros((out_rows.count, route.out_time.size, *values.shape[2:]), values.dtype)
    return zero_padding(out, pad_mask(route.out_time, fetch.packet)), out_rows


def run_inter(op: Any, values: np.ndarray, rows: Rows) -> tuple[np.ndarray, Rows]:
    t, out = op.input_type, op.output_type
    check(values.dtype == value_dtype(t.dtype) and values.shape[1] == t.time.size,
          f"the reducer reads {t.time.size} steps of {t.dtype}", op)
    out_rows = Rows((t.chip, t.cluster, op.out_slice))
    result = np.zeros((out_rows.count, out.time.size, values.shape[2]), values.dtype)
    groups = {key: (sel, slices, run) for key, sel, slices, run in rows.slice_groups()}
    for key, sel_out in out_rows.groups():
        ring = _ring(values, groups.get(key), t.slice.size)
        try:
            moved = reduce_ring(op.scalar, op.op.name, ring, t.slice, t.time, op.out_slice, out.time)
        except (ValueError, TypeError, KeyError) as e:
            raise InterpError(f"the reducer cannot fold this stream: {e}", op) from None
        result[sel_out] = moved[out_rows.slice[sel_out]]
    return zero_padding(result, pad_mask(out.time, out.packet)), out_rows


def _ring(values: np.ndarray, group: tuple[np.ndarray, np.ndarray, bool] | None, size: int) -> np.ndarray:
    """One (chip, cluster) ring of `size` slices laid out from the rows of its group (sel,
    slices, consecutive) of `values`, zeros in the slices it does not run: the rows
    themselves (a view) when they are every slice in order."""
    if group is not None and group[2] and len(group[1]) == size and int(group[1][0]) == 0:
        first = int(group[0][0])     # a group's rows are consecutive (`Rows.groups`)
        return values[first:first + size]
    ring = np.zeros((size, *values.shape[1:]), values.dtype)
    if group is not None:
        ring[group[1]] = values[group[0]]
    return ring


@executes("inter_slice_reduce")
def _inter_step(ops: list[Any], i: int, state: ProgramState) -> int:
    op = ops[i]
    state.local[op.result.id], state.rows = run_inter(op, state.input(op.input, op), state.rows)
    return 1
