"""`vrf_load` and `vector_rf` records: the Vector Register File of every slice.

A load writes each live cell of its stream to word `write` (the record's walk over time
and packet) of a `words`-word tensor, for every live slice row; cells nothing writes read
as zero. A `vector_rf` pass reads, for each stream cell, the word its `rf_read` walk names
and hands those values to its `_RF` steps (`ir.vector.numerics.steps.run_step`). Values
stay as the interpreter keeps them (i32 as int32, f32 as uint32 bit patterns).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tu_ops.vrf import rf_offsets
from visa.interp.errors import check
from visa.interp.fast import lanes
from visa.interp.fast.lanes import Front, front_start
from visa.interp.shortcuts import per_record
from visa.interp.steps import ProgramState, runs
from visa.interp.values import pad_mask
from visa.interp.vector import check_input, run_vector

__all__ = ["VrfValues", "run_vrf_load", "rf_operands", "loaded"]


class VrfValues:
    """A loaded VRF tensor: its load record and (rows, words) stored values."""

    def __init__(self, op: Any, words: np.ndarray) -> None:
        self.op = op
        self.words = words


def run_vrf_load(op: Any, stream: np.ndarray | Front) -> VrfValues:
    """Store the live cells of the (rows, T, 8) stream at their words (a `Front` one when
    no live cell is in a back lane: `_front_live`)."""
    check_input(op, stream)
    walked, live, at = _load_plan(op)
    check(walked == stream.shape[1:], f"the write walks {walked}, the stream is {stream.shape[1:]}", op)
    check(live.shape == walked, f"the write walks {walked}, the stream's type is {live.shape}", op)
    check(int(at.max(initial=0)) < op.words, "the write walk leaves the tensor", op)
    words = np.zeros((stream.shape[0], op.words), stream.dtype)
    if isinstance(stream, Front):
        check(_front_live(op), "a live cell of the stream is in a back lane", op)
        words[:, at] = stream.values[:, live[:, :4]]
    else:
        words[:, at] = stream[:, live]
    return VrfValues(op, words)


@per_record
def _load_plan(op: Any) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """A load's (T, P) write walk shape, the live cells of its stream type and the word each
    writes, in stream order (none when the walk and the type disagree)."""
    t = op.input_type
    offsets = rf_offsets(op.write)
    live = ~pad_mask(t.time, t.packet)
    return offsets.shape, live, offsets[live] if offsets.shape == live.shape else offsets[:0, 0]


@per_record
def _front_live(op: Any) -> bool:
    """Are all the live cells of a load's 8-lane stream in its front four lanes?"""
    t = op.input_type
    return t.packet.size == 8 and not (~pad_mask(t.time, t.packet))[:, 4:].any()


def rf_operands(op: Any, stream: np.ndarray | Front, vrfs: list[VrfValues]) -> list[np.ndarray]:
    """For each VRF tensor of a record that reads the VRF, the stored value each stream cell
    reads (each cell of its front four lanes for a `Front` stream)."""
    check(len(vrfs) == len(op.rf_read), "one rf_read walk per VRF tensor", op)
    operands = []
    for vrf, read in zip(vrfs, op.rf_read):
        offsets, top, column = _walk(read)
        check(offsets.shape[1:] == stream.shape[2:], "rf_read does not walk the stream", op)  # time: per step
        check(top < vrf.words.shape[1], "rf_read leaves the VRF tensor", op)
        check(vrf.words.shape[0] == stream.shape[0], "the VRF tensor lives in other slices", op)
        if isinstance(stream, Front):
            offsets = offsets[:, :4]
        if column is None:
            operands.append(vrf.words[:, offsets])
        else:  # every cell of a flit reads one word: that word, broadcast over the packet (read-only)
            operands.append(np.broadcast_to(vrf.words[:, column, None], (vrf.words.shape[0], *offsets.shape)))
    return operands


@per_record
def _walk(read: Any) -> tuple[np.ndarray, int, np.ndarray | None]:
    """An rf_read walk's (T, P) word offsets, the highest, and when each step reads one word
    for its whole packet (every packet stride 0), that word per step, else None."""
    offsets = rf_offsets(read)
    flat = all(e.stride == 0 for e in read.packet)
    return offsets, int(offsets.max(initial=0)), np.ascontiguousarray(offsets[:, 0]) if flat else None


def loaded(op: Any, state: ProgramState) -> list[VrfValues]:
    """The loaded VRF tensors a record's `rf` names."""
    vrfs = [state.env.get(ref.id) for ref in op.rf]
    if not all(isinstance(v, VrfValues) for v in vrfs):
        check(False, f"rf {list(map(str, op.rf))} are not loaded VRF tensors", op)
    return vrfs


@runs("vrf_load", env=True)
def _vrf_load_step(op: Any, state: ProgramState) -> Any:
    return run_vrf_load(op, state.input(op.input, op, front=_front_live(op)))


@runs("vector_rf")
def _vector_rf_step(op: Any, state: ProgramState) -> Any:
    """The pass's steps in order, the `_RF` ones reading their VRF tensor through `rf_read`
    (a `Front` stream and `front` as for `run_vector`)."""
    stream = state.input(op.input, op, front=front_start(op))
    check_input(op, stream)
    return run_vector(op, stream, rf_operands(op, stream, loaded(op, state)), state.rows.slice, front=lanes.held())
