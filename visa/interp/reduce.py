"""An intra-slice reduce step of a `vector` / `vector_rf` record on the interpreter's
(rows, T, 8) values: the record's input time and trimmed packet reduce to its output time
and, for arg 1, the one-cell packet `1 # 4` (`ir.vector.intra_reduce`, the fold both
backends share)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.mapping.api import m
from ir.mapping.nodes import Resize
from ir.valid_count import slice_counts
from ir.vector.intra_reduce import reduce_counted, reduce_stored, removed_axis
from tu_ops.valid_count import pack_to_vcg
from tu_ops.vector import stream_before
from visa.interp.errors import check

__all__ = ["is_reduce", "run_reduce_step"]


def is_reduce(step: Any) -> bool:
    return step.unit.name.startswith("INTRA_REDUCE_")


def run_reduce_step(op: Any, step: Any, values: np.ndarray, slices: np.ndarray | None = None) -> np.ndarray:
    """The reduce of `step` on (rows, T, 8) values; a step with `vcg=` folds only the cells its
    Valid Count Generator counts for each row's slice id (`slices`)."""
    t, out = op.input_type, op.output_type
    time, packet = stream_before(t.time, t.packet, op.steps, op.steps.index(step))  # after a split too
    packet = Resize(packet, 4).normalize()
    out_packet = m("1 # 4") if step.arg == 1 else packet
    axis = removed_axis(time, packet, out.time, out_packet)
    check(axis is not None and values.shape[1] == time.size, "the reduce does not remove one axis", op)
    scalar = "i32" if step.unit.name.endswith("I32") else "f32"
    lanes = np.ascontiguousarray(values[..., :4])
    vcg = getattr(step, "vcg", None)
    if vcg is None:
        reduced = reduce_stored(scalar, step.op.name, lanes, axis, time, packet, out.time, out_packet)
    else:
        check(slices is not None and len(slices) == values.shape[0], "a counted reduce needs its rows' slices", op)
        counts = slice_counts(pack_to_vcg(vcg), slices, time.size)
        live = np.arange(4)[None, None, :] < counts[:, :, None]
        reduced = reduce_counted(scalar, step.op.name, lanes, live, axis, time, out.time, out_packet)
    result = np.zeros((values.shape[0], out.time.size, 8), values.dtype)
    result[..., :4] = reduced
    return result
