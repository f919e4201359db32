"""The data-movement engine records: `transpose` runs `ir.switch.semantics` on the
stream's live slices, with the engine parameters the record states; its Unpack width is
the dtype's base packing shifted by the record's `fetch_in_width_shift` (doubled packing
reads 16 elements of each 8- or 16-bit packet). A stream held as a broadcast's distinct rows
is turned row by distinct row when a shortcut does so (visa/interp/fast/transpose_rows.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.transpose.params import engine_shape
from ir.switch.semantics import transpose_cells, transpose_data
from visa.interp.errors import check
from visa.interp.shortcuts import Held, shortcut
from visa.interp.steps import ProgramState, runs

__all__ = ["run_transpose"]


def run_transpose(op: Any, stream: np.ndarray, cells_only: bool = False) -> np.ndarray:
    """(rows, T, flit) -> (rows, T / (in_rows * packets_per_col) * out_rows, flit); with
    `cells_only`, each output flit's first `in_rows` cells only (the others are zero)."""
    rows, steps, cells = stream.shape
    tile = op.in_rows * op.packets_per_col
    check(tile > 0 and steps % tile == 0, f"in_rows {op.in_rows} x packets_per_col {op.packets_per_col} "
          f"does not split the {steps} time steps", op)
    check(op.in_cols == op.packets_per_col * op.valid_size_per_packet and op.in_rows <= cells
          and op.valid_size_per_packet <= cells and op.out_rows <= op.in_cols,
          "the transpose parameters do not fit the stream's packet", op)
    shape = engine_shape(op.input_type.dtype)
    shift = op.fetch_in_width_shift or 0
    check(shape is not None and shift in (0, 1) and op.valid_size_per_packet == shape.valid << shift,
          f"the engine unpacks {'?' if shape is None else shape.valid << shift} elements per packet "
          f"(fetch_in_width_shift={shift}); the record states valid_size_per_packet={op.valid_size_per_packet}", op)
    out_t = op.output_type
    n_out = steps // tile * op.out_rows
    check((n_out, cells) == (out_t.time.size, out_t.packet.size), f"the record produces ({n_out}, {cells}) steps x "
          f"cells, its output stream is ({out_t.time.size}, {out_t.packet.size})", op)
    return transpose_cells(stream, op.params) if cells_only else transpose_data(stream, op.params, n_out)


@runs("transpose")
def _transpose_step(op: Any, state: ProgramState) -> Any:
    stream = state.input(op.input, op, repeated=True)
    if isinstance(stream, Held):   # a broadcast's distinct rows (visa/interp/fast/transpose_rows.py)
        rows = shortcut("transpose_rows")
        held = None if rows is None else rows(op, stream, state.mem, run_transpose)
        return held if held is not None else run_transpose(op, stream.materialize())
    return run_transpose(op, stream)
