"""The `vector` record: the configured Vector Engine steps, run in order on the stream.

Values stay as the interpreter keeps them (i32 as int32, f32 as uint32 bit patterns);
each step is `ir.vector.numerics.steps.run_step` of the record's `(unit, op, arg)`.
Padding positions of the output stream are set to zero, as after every record.

An intra-slice reduce step, of a `vector` / `vector_rf` / `vector_branch` / `vector_pair`
record, runs on the interpreter's (rows, T, 8) values: the stream the step reads reduces to the
one it leaves (`tu_ops.vector_reduce.record_shapes`), its packet kept or, for arg 1, the
one-cell packet `1 # 4` (`ir.vector.intra_reduce`, the fold both backends share). A front-lane
pass (`visa.interp.fast.lanes`) hands it (rows, T, 4) values and gets the same four lanes back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.valid_count import slice_counts
from ir.vector.intra_reduce import reduce_counted, reduce_stored, removed_axis
from ir.vector.numerics.steps import run_step
from ir.vector.units import is_rf
from tu_ops.valid_count import pack_to_vcg
from tu_ops.vector_reduce import is_reduce, record_shapes
from visa.interp.errors import check
from visa.interp.fast import lanes
from visa.interp.fast.lanes import Front, front_lanes, front_start, pad_front, trim_at, widen_front
from visa.interp.shortcuts import per_record, shortcut
from visa.interp.steps import ProgramState, runs
from visa.interp.values import value_dtype, zero_pad

__all__ = ["run_vector", "check_input", "finish_pass", "is_reduce", "run_reduce_step"]


def run_vector(op: Any, stream: np.ndarray | Front, operand: list[np.ndarray] | None = None,
               slices: np.ndarray | None = None, front: bool = False) -> np.ndarray | Front:
    """(rows, T, 8) values of the input dtype -> the same shape of the output dtype;
    `operand[k]` is what an `_RF` step of arg k reads (a `vector_rf` record's VRF values);
    `slices` the rows' slice ids (a reduce's Valid Count Generator reads them). A `Front`
    stream is read on its four lanes (the pass must allow it: `front_start`); `front`: a
    front-lane pass may leave a `Front` (else the 8-lane stream)."""
    check_input(op, stream)
    at = trim_at(op)
    if isinstance(stream, Front):  # on the front four lanes from the start (visa.interp.fast.lanes)
        check(front_start(op), "the pass cannot start on a four-lane stream", op)
        source = values = stream.values
        operand = front_lanes(values, operand)[1]
    else:
        source = values = stream
    fp_unary = shortcut("fp_unary")  # visa/interp/fast/unary.py: the same values, no fresh float64 arrays
    for i, step in enumerate(op.steps):
        if i == at:  # from the trim on, the front four lanes (visa.interp.fast.lanes)
            if values.shape[-1] == 4:
                continue  # a Front's back lanes are gone already: nothing to trim
            values, operand = front_lanes(values, operand)
        if is_reduce(step):
            values = run_reduce_step(op, i, values, slices)
            continue
        fast = fp_unary(step.op.name, values) if fp_unary is not None and step.unit.name == "FP_UNARY" else None
        if fast is not None:
            values = fast
            continue
        try:
            rhs = operand[step.arg] if is_rf(step.unit) and operand is not None else None
            values = run_step(step.unit.name, step.op.name, step.arg, values, step.mode.name, step.arg1, operand=rhs)
        except (KeyError, TypeError, ValueError) as e:
            check(False, f"step {i} ({step.unit.name} {step.op.name}) cannot run: {e}", op)
    return finish_pass(op, values, front, source)


def check_input(op: Any, stream: np.ndarray) -> None:
    """A vector record reads values of its input dtype."""
    if stream.dtype != value_dtype(op.input_type.dtype):  # (the message formatted only when it is raised)
        check(False, f"the stream does not hold {op.input_type.dtype} values", op)


def finish_pass(op: Any, values: np.ndarray, front: bool = False,
                source: np.ndarray | None = None) -> np.ndarray | Front:
    """The end of a vector record's pass: values of the output dtype, padding set to zero (a
    copy, unless the steps left an array that shares no memory with the pass's input
    `source`); a front-lane pass's (rows, T, 4) values widen to 8 lanes, the back four zero,
    or (`front`) stay a `Front`."""
    if values.dtype != value_dtype(op.output_type.dtype):
        check(False, f"the steps leave {values.dtype} values, the output stream holds {op.output_type.dtype}", op)
    t = op.output_type
    fresh = source is not None and not np.may_share_memory(values, source) and values.flags.c_contiguous \
        and values.flags.writeable
    if values.shape[-1] == 4 and front:
        check(values.shape[1:] == (t.time.size, 4) and t.packet.size == 8, f"the pass gives {values.shape[1:]} steps "
              f"x front lanes, its output stream is {(t.time.size, t.packet.size)}", op)
        return Front(pad_front(values if fresh else np.array(values, copy=True), t.time, t.packet))
    if values.shape[-1] == 4:
        out = widen_front(values)
    else:
        out = values if fresh else np.array(values, copy=True)
    check(out.shape[1:] == (t.time.size, t.packet.size), f"the pass gives {out.shape[1:]} steps x cells, its "
          f"output stream is {(t.time.size, t.packet.size)}", op)
    return zero_pad(out, t.time, t.packet)


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


@runs("vector")
def _vector_step(op: Any, state: ProgramState) -> Any:
    stream = state.input(op.input, op, front=front_start(op))
    return run_vector(op, stream, slices=state.rows.slice, front=lanes.held())
