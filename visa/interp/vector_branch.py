"""The `vector_branch` record: the tag unit's execution ids from the entering stream, then each
step, with its guarded slots where it has them (`ir.vector.branching`). Values are kept as
the interpreter keeps them (i32 as int32, f32 as uint32 bits); a 4-way stream keeps its
cells in the front four lanes of each flit, so the ids stay aligned with the cells."""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.branching import branch_step, stash_step, tag_ids
from ir.vector.numerics.steps import run_step
from ir.vector.units import is_rf
from visa.interp.errors import check
from visa.interp.fast.lanes import front_lanes, trim_at
from visa.interp.steps import ProgramState, runs
from visa.interp.vector import check_input, finish_pass, is_reduce, run_reduce_step
from visa.interp.vrf import loaded, rf_operands

__all__ = ["run_vector_branch"]


def run_vector_branch(op: Any, stream: np.ndarray, operand: list[np.ndarray] | None = None,
                      slices: np.ndarray | None = None) -> np.ndarray:
    """(rows, T, 8) values of the input dtype -> the shape of the output dtype; `operand[k]` is
    what an `_RF` step of arg k reads (a `vector_branch_rf` record's VRF values)."""
    check_input(op, stream)
    scalar = "f32" if op.input_type.dtype.name == "F32" else "i32"
    ids = tag_ids(stream, tuple((c.cmp.name, c.bound) for c in op.tag), scalar)
    values, stashed, at = stream, None, trim_at(op)
    for i, step in enumerate(op.steps):
        unit, name = step.unit.name, step.op.name
        if i == at:  # from the trim on, the front four lanes (visa.interp.fast.lanes)
            values, operand = front_lanes(values, operand)
        stashed = values if i == op.stash_at else stashed
        reads_stash = any(s.port == 2 for s in step.slots)  # the rf slot of a branch step reads the stash
        if step.stash or reads_stash:
            check(stashed is not None and stashed.shape == values.shape, f"step {i} reads an unwritten stash", op)
        try:
            if step.stash:
                values = stash_step(unit, name, step.mode.name, step.arg1, values, stashed)
            elif step.slots:
                slots = tuple((s.mask, s.want, s.neg, s.value, s.value1) for s in step.slots if not s.port)
                port = next(((s.mask, s.want, s.neg, s.value) for s in step.slots if s.port), None)
                if reads_stash:
                    port = (*port[:3], stashed, step.slots[-1].value1)
                elif port is not None:  # the rf slot reads VRF tensor `value`
                    check(operand is not None and 0 <= port[3] < len(operand), f"step {i} reads no VRF tensor", op)
                    port = (*port[:3], operand[port[3]])
                values = branch_step(unit, name, values, ids, slots, port, step.mode.name, reads_stash)
            elif is_reduce(step):
                values = run_reduce_step(op, i, values, slices)
            else:
                rhs = operand[step.arg] if is_rf(unit) and operand is not None else None
                values = run_step(unit, name, step.arg, values, step.mode.name, step.arg1, operand=rhs)
        except (KeyError, TypeError, ValueError) as e:
            check(False, f"step {i} ({unit} {name}) cannot run: {e}", op)
    return finish_pass(op, values)


@runs("vector_branch")
def _vector_branch_step(op: Any, state: ProgramState) -> Any:
    return run_vector_branch(op, state.input(op.input, op), slices=state.rows.slice)


@runs("vector_branch_rf")
def _vector_branch_rf_step(op: Any, state: ProgramState) -> Any:
    """A tagged pass whose `_RF` steps and rf slots read their VRF tensor through `rf_read`, as
    a `vector_rf` pass does (`visa.interp.vrf`)."""
    stream = state.input(op.input, op)
    return run_vector_branch(op, stream, rf_operands(op, stream, loaded(op, state)), state.rows.slice)
