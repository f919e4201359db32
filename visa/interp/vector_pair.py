"""The `vector_pair` record: unzip the stream into its two groups, run the paired steps, zip,
run the merged steps (`ir.vector.pair`, `ir.vector.numerics.steps.run_step`).

Values stay as the interpreter keeps them (i32 as int32, f32 as uint32 bits), each step
stream as `(rows, T, 8)`: a 4-way stream keeps its packet in the front four lanes with the
back four zero, so `NARROW_SPLIT` turns `(rows, T, 8)` into `(rows, 2T, 8)` of half flits and
`WIDEN_CONCAT` back. Padding positions of the output stream are set to zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.numerics.steps import run_step
from ir.vector.units import spec_of
from ir.vector.pair import unzip_index, zip_values
from visa.interp.errors import check
from visa.interp.shortcuts import per_record
from visa.interp.steps import ProgramState, runs
from visa.interp.vector import check_input, finish_pass, is_reduce, run_reduce_step
from visa.interp.vrf import loaded, rf_operands

__all__ = ["run_vector_pair"]


@per_record
def _unzip_index(op: Any) -> np.ndarray | str:
    """`unzip_index` of the record's stream (its fields alone fix it: once per record)."""
    return unzip_index(op.input_type.time, op.split_time, op.axis.name)


def _unzip(op: Any, stream: np.ndarray) -> np.ndarray:
    index = _unzip_index(op)
    check(not isinstance(index, str), f"the unzip cannot run: {index}", op)
    groups = np.take(stream, np.maximum(index, 0), axis=1)  # (rows, 2, S, 8)
    groups = np.where((index >= 0)[None, :, :, None], groups, np.zeros((), stream.dtype))
    return np.moveaxis(groups, 1, 0)


def _run(op: Any, i: int, values: Any, operands: list[np.ndarray] | None = None,
         slices: np.ndarray | None = None) -> Any:
    step = op.steps[i]
    unit, name, side = step.unit.name, step.op.name, step.side.name
    if is_reduce(step):  # on the merged stream
        return run_reduce_step(op, i, values, slices)
    if side == "ZIP":
        return zip_values(unit, name, step.arg0, values[0], values[1])
    if spec_of(unit).shape:  # a way change (its run in ir.vector.numerics.unit_runs)
        return run_step(unit, name, 0, values)
    mode = step.mode.name
    if side == "MERGED":
        return run_step(unit, name, step.arg0, values, mode, step.arg1)
    out = [_group(step, g, arg, values[g], operands) if side in ("BOTH", f"G{g}") else values[g]
           for g, arg in ((0, step.arg0), (1, step.arg1))]
    check(out[0].dtype == out[1].dtype, "the groups hold values of different scalars", op)
    return np.stack(out)


def _group(step: Any, g: int, arg: int, values: np.ndarray, operands: list[np.ndarray] | None) -> np.ndarray:
    """Group g's step: with its constant, or (its `rf` bit set) with VRF tensor `arg`'s values."""
    if not step.rf >> g & 1:  # add<g>: a paired FMA_F's c of the group
        return run_step(step.unit.name, step.op.name, arg, values, step.mode.name, (step.add0, step.add1)[g])
    if operands is None or not 0 <= arg < len(operands):
        raise IndexError(f"group {g} reads VRF tensor {arg}, the record names {len(operands or ())}")
    return run_step(f"{step.unit.name}_RF", step.op.name, 0, values, operand=operands[arg])


def run_vector_pair(op: Any, stream: np.ndarray, vrfs: list[Any] | None = None,
                    slices: np.ndarray | None = None) -> np.ndarray:
    """(rows, T, 8) values of the input dtype -> (rows, T', 8) of the output dtype; `vrfs` the
    loaded VRF tensors of a `vector_pair_rf` record, `slices` the rows' slice ids (a reduce's
    Valid Count Generator reads them)."""
    check_input(op, stream)
    values: Any = _unzip(op, stream)
    for i, step in enumerate(op.steps):
        try:
            values = _run(op, i, values, _operands(op, i, values, vrfs), slices)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            check(False, f"step {i} ({step.unit.name} {step.op.name}) cannot run: {e}", op)
    return finish_pass(op, values)


def _operands(op: Any, i: int, values: Any, vrfs: list[Any] | None) -> list[np.ndarray] | None:
    """The value each cell of a group's stream reads from each VRF tensor, at step i."""
    if vrfs is None or not op.steps[i].rf:
        return None

    return rf_operands(op, values[0], vrfs)


@runs("vector_pair")
def _vector_pair_step(op: Any, state: ProgramState) -> Any:
    return run_vector_pair(op, state.input(op.input, op), slices=state.rows.slice)


@runs("vector_pair_rf")
def _vector_pair_rf_step(op: Any, state: ProgramState) -> Any:
    return run_vector_pair(op, state.input(op.input, op), loaded(op, state), state.rows.slice)
