"""An intra-slice reduce step of a `vector` / `vector_rf` / `vector_branch` / `vector_pair`
record on the interpreter's (rows, T, 8) values: the stream the step reads reduces to the
one it leaves (`tu_ops.vector_reduce.record_shapes`), its packet kept or, for arg 1, the
one-cell packet `1 # 4` (`ir.vector.intra_reduce`, the fold both backends share). A front-lane
pass (`visa.interp.fast.lanes`) hands it (rows, T, 4) values and gets the same four lanes back."""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.valid_count import slice_counts
from ir.vector.intra_reduce import reduce_counted, reduce_stored, removed_axis
from tu_ops.valid_count import pack_to_vcg
from tu_ops.vector_reduce import is_reduce, record_shapes
from visa.interp.errors import check
from visa.interp.fast.memo import per_record

__all__ = ["is_reduce", "run_reduce_step"]


@per_record
def _shapes(op: Any, index: int) -> tuple[tuple[Any, Any, Any, Any], str | None]:
    """The (time, packet, out_time, out_packet) of reduce step `index` of `op` (after a split
    too) and the axis it removes (None: not one), once per record."""
    sh = record_shapes(op, index)
    shapes = (sh.time, sh.packet, sh.out_time, sh.out_packet)
    return shapes, removed_axis(*shapes)


def run_reduce_step(op: Any, index: int, values: np.ndarray, slices: np.ndarray | None = None) -> np.ndarray:
    """The reduce of step `index` of `op` on (rows, T, 8) values; a step with `vcg=` folds only
    the cells its Valid Count Generator counts for each row's slice id (`slices`)."""
    (time, packet, out_time, out_packet), axis = _shapes(op, index)
    step = op.steps[index]
    check(axis is not None and values.shape[1] == time.size, "the reduce does not remove one axis", op)
    scalar = "i32" if step.unit.name.endswith("I32") else "f32"
    lanes = np.ascontiguousarray(values[..., :4])
    vcg = getattr(step, "vcg", None)
    if vcg is None:
        reduced = reduce_stored(scalar, step.op.name, lanes, axis, time, packet, out_time, out_packet)
    else:
        check(slices is not None and len(slices) == values.shape[0], "a counted reduce needs its rows' slices", op)
        counts = slice_counts(pack_to_vcg(vcg), slices, time.size)
        live = np.arange(4)[None, None, :] < counts[:, :, None]
        reduced = reduce_counted(scalar, step.op.name, lanes, live, axis, time, out_time, out_packet)
    result = np.zeros((values.shape[0], out_time.size, values.shape[-1]), values.dtype)  # 4: a front-lane pass
    result[..., :4] = reduced
    return result
