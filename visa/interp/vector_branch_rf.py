"""The `vector_branch_rf` record: a tagged pass (`visa.interp.vector_branch`) whose `_RF` steps
and rf slots read their VRF tensor through `rf_read`, as a `vector_rf` pass does
(`visa.interp.vrf`)."""

from __future__ import annotations

from typing import Any

from visa.interp.steps import ProgramState, runs
from visa.interp.vector_branch import run_vector_branch
from visa.interp.vrf import loaded, rf_operands

__all__: list[str] = []


@runs("vector_branch_rf")
def _vector_branch_rf_step(op: Any, state: ProgramState) -> Any:
    stream = state.input(op.input, op)
    return run_vector_branch(op, stream, rf_operands(op, stream, loaded(op, state)), state.rows.slice)
