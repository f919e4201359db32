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
from visa.interp.lanes import front_lanes, trim_at, widen_front
from visa.interp.reduce import is_reduce, run_reduce_step
from visa.interp.steps import ProgramState, executes
from visa.interp.values import value_dtype, zero_pad

__all__ = ["run_vector", "check_input", "finish_pass"]


def run_vector(op: Any, stream: np.ndarray, operand: list[np.ndarray] | None = None,
               slices: np.ndarray | None = None) -> np.ndarray:
    """(rows, T, 8) values of the input dtype -> the same shape of the output dtype;
    `operand[k]` is what an `_RF` step of arg k reads (a `vector_rf` record's VRF values);
    `slices` the rows' slice ids (a reduce's Valid Count Generator reads them)."""
    check_input(op, stream)
    values, at = stream, trim_at(op)
    for i, step in enumerate(op.steps):
        if i == at:  # from the trim on, the front four lanes (visa.interp.lanes)
            values, operand = front_lanes(values, operand)
        if is_reduce(step):
            values = run_reduce_step(op, i, values, slices)
            continue
        try:
            rhs = operand[step.arg] if is_rf(step.unit) and operand is not None else None
            values = run_step(step.unit.name, step.op.name, step.arg, values, step.mode.name, step.arg1, operand=rhs)
        except (KeyError, TypeError, ValueError) as e:
            check(False, f"step {i} ({step.unit.name} {step.op.name}) cannot run: {e}", op)
    return finish_pass(op, values)


def check_input(op: Any, stream: np.ndarray) -> None:
    """A vector record reads values of its input dtype."""
    check(stream.dtype == value_dtype(op.input_type.dtype), f"the stream does not hold {op.input_type.dtype} values",
          op)


def finish_pass(op: Any, values: np.ndarray) -> np.ndarray:
    """The end of a vector record's pass: values of the output dtype, padding set to zero (a copy);
    a front-lane pass's (rows, T, 4) values widen to 8 lanes, the back four zero."""
    check(values.dtype == value_dtype(op.output_type.dtype), f"the steps leave {values.dtype} values, the output "
          f"stream holds {op.output_type.dtype}", op)
    out = widen_front(values) if values.shape[-1] == 4 else np.array(values, copy=True)
    t = op.output_type
    check(out.shape[1:] == (t.time.size, t.packet.size), f"the pass gives {out.shape[1:]} steps x cells, its "
          f"output stream is {(t.time.size, t.packet.size)}", op)
    return zero_pad(out, t.time, t.packet)


@executes("vector")
def _vector_step(ops: list[Any], i: int, state: ProgramState) -> int:
    op = ops[i]
    state.local[op.result.id] = run_vector(op, state.input(op.input, op), slices=state.rows.slice)
    return 1
