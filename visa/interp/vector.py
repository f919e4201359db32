"""The `vector` record: the configured Vector Engine steps, run in order on the stream.

Values stay as the interpreter keeps them (i32 as int32, f32 as uint32 bit patterns);
each step is `ir.vector.numerics.steps.run_step` of the record's `(unit, op, arg)`.
Padding positions of the output stream are set to zero, as after every record.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.numerics.steps import run_step
from ir.vector.units import is_rf
from visa.interp.errors import check
from visa.interp.fast import lanes
from visa.interp.fast.lanes import Front, front_lanes, front_start, pad_front, trim_at, widen_front
from visa.interp.reduce import is_reduce, run_reduce_step
from visa.interp.steps import ProgramState, runs
from visa.interp.unary import via_f64
from visa.interp.values import value_dtype, zero_pad

__all__ = ["run_vector", "check_input", "finish_pass"]


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
    for i, step in enumerate(op.steps):
        if i == at:  # from the trim on, the front four lanes (visa.interp.fast.lanes)
            if values.shape[-1] == 4:
                continue  # a Front's back lanes are gone already: nothing to trim
            values, operand = front_lanes(values, operand)
        if is_reduce(step):
            values = run_reduce_step(op, i, values, slices)
            continue
        fast = via_f64(step.op.name, values) if step.unit.name == "FP_UNARY" else None
        if fast is not None:  # visa.interp.unary: the same values, no fresh float64 arrays
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


@runs("vector")
def _vector_step(op: Any, state: ProgramState) -> Any:
    stream = state.input(op.input, op, front=front_start(op))
    return run_vector(op, stream, slices=state.rows.slice, front=lanes.held())
