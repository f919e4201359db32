"""The `inter_slice_reduce` record: each (chip, cluster) ring laid out as
`x[slice, time, packet]` over the input slice (slices the program does not run hold
zeros and are padding of the input, so never read), folded by `ir.vector.inter_reduce`
(the fold both backends share); the program runs on the rows live in `out_slice` from here on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.inter_reduce import reduce_ring
from visa.interp.errors import InterpError, check
from visa.interp.rows import Rows
from visa.interp.steps import ProgramState, executes
from visa.interp.values import pad_mask, value_dtype, zero_padding

__all__: list[str] = []


def run_inter(op: Any, values: np.ndarray, rows: Rows) -> tuple[np.ndarray, Rows]:
    t, out = op.input_type, op.output_type
    check(values.dtype == value_dtype(t.dtype) and values.shape[1] == t.time.size,
          f"the reducer reads {t.time.size} steps of {t.dtype}", op)
    out_rows = Rows((t.chip, t.cluster, op.out_slice))
    result = np.zeros((out_rows.count, out.time.size, values.shape[2]), values.dtype)
    groups = dict(rows.groups())
    for key, sel_out in out_rows.groups():
        ring = np.zeros((t.slice.size, *values.shape[1:]), values.dtype)
        sel = groups.get(key)
        if sel is not None:
            ring[rows.slice[sel]] = values[sel]
        try:
            moved = reduce_ring(op.scalar, op.op.name, ring, t.slice, t.time, op.out_slice, out.time)
        except (ValueError, TypeError, KeyError) as e:
            raise InterpError(f"the reducer cannot fold this stream: {e}", op) from None
        result[sel_out] = moved[out_rows.slice[sel_out]]
    return zero_padding(result, pad_mask(out.time, out.packet)), out_rows


@executes("inter_slice_reduce")
def _inter_step(ops: list[Any], i: int, state: ProgramState) -> int:
    op = ops[i]
    state.local[op.result.id], state.rows = run_inter(op, state.input(op.input, op), state.rows)
    return 1
