"""Front-lane passes: the steps after a pass's `NARROW_TRIM` run on the front four lanes only.

After the trim a 4-way stream keeps its cells in the front four lanes of each flit; the
back four hold zeros, or whatever a later element-wise step makes of zeros (exp(0) = 1),
until the end of the pass sets the output's padding to zero. When nothing after the trim
moves cells between lanes (no `NARROW_SPLIT` / `WIDEN_CONCAT`), a reduce reads the front
four lanes only, the stash is taken after the trim, and the output packet has its back four
lanes as padding, the back lanes never reach the result: the pass runs on `(rows, T, 4)`
values from its trim on, and `widen_front` puts them back in an 8-lane stream whose back
lanes are zero, the bytes the 8-lane run gives.

Such a stream need not be widened at all: a `Front` holds an 8-lane stream whose back four
lanes are zero as its front four, contiguous. A feed whose packets fill at most the front
four lanes of one flit delivers one, and so does a front-lane pass; a reader that takes
one (a pass whose steps before its trim keep every cell in its lane, `front_start`; a
commit of at most four cells; a VRF load of front cells) reads the four lanes, any other
gets the stream widened (`visa.interp.steps.ProgramState.input`). `HELD` off, no feed or
pass leaves a `Front` (the tests compare the two).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.units import spec_of
from tu_ops.vector_reduce import is_reduce
from visa.interp.shortcuts import Held, per_record
from visa.interp.fast import speed
from visa.interp.values import pad_mask, zero_pad

__all__ = ["Front", "held", "trim_at", "front_start", "front_lanes", "widen_front", "pad_front"]

_MOVES = ("split", "concat")
HELD = True  # do feeds and front-lane passes leave `Front` streams (with the speed switch on)?


def held() -> bool:
    """Whether feeds and front-lane passes leave `Front` streams now (`HELD`, `visa.interp.fast.speed`)."""
    return HELD and speed.on()


class Front(Held):
    """A `(rows, T, 8)` stream whose back four lanes are zero, held as its front four lanes
    `values` (rows, T, 4), C-contiguous, owned by the stream (nothing writes them)."""

    KIND = "front"

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.shape = (*values.shape[:-1], 8)
        self.dtype = values.dtype

    def materialize(self) -> np.ndarray:
        """The 8-lane stream, the back four lanes zero (a new array)."""
        return widen_front(self.values)


@per_record
def trim_at(op: Any) -> int:
    """The index of the `NARROW_TRIM` step from which `op`'s pass can run on the front four
    lanes, or -1 (no trim, a way change after it, a stash taken before it, back lanes live)."""
    t = op.output_type
    if op.input_type.packet.size != 8 or t.packet.size != 8 or not pad_mask(t.packet)[4:].all():
        return -1
    at = next((i for i, s in enumerate(op.steps) if s.unit.name == "NARROW_TRIM"), -1)
    stash = getattr(op, "stash_at", -1)
    if at < 0 or 0 <= stash <= at:
        return -1
    try:
        if any(spec_of(s.unit).shape in _MOVES for s in op.steps[at + 1:]):
            return -1
    except KeyError:  # an unknown unit: the 8-lane run reports it
        return -1
    return at


@per_record
def front_start(op: Any) -> bool:
    """Can `op`'s pass run on the front four lanes from its first step (its input a
    `Front`)? Yes when it can from its trim on (`trim_at`) and every step before the trim
    leaves each cell in its lane (no reduce, no way change): what those steps make of the
    back lanes, the trim drops."""
    at = trim_at(op)
    try:
        return at >= 0 and not any(is_reduce(s) or spec_of(s.unit).shape for s in op.steps[:at])
    except KeyError:  # an unknown unit: the 8-lane run reports it
        return False


def front_lanes(values: np.ndarray, operand: list[np.ndarray] | None) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """The stream and the VRF operands (one stored value per cell) on their front four lanes."""
    return values[..., :4], None if operand is None else [o[..., :4] for o in operand]


def widen_front(values: np.ndarray) -> np.ndarray:
    """(rows, T, 4) values -> (rows, T, 8), the back four lanes zero (a new array)."""
    out = np.zeros((*values.shape[:-1], 8), values.dtype)
    out[..., :4] = values
    return out


def pad_front(values: np.ndarray, time: Any, packet: Any) -> np.ndarray:
    """`zero_pad` of the (rows, T, 4) front lanes of a stream of type `time` x `packet`
    (8 cells) (in place)."""
    zero_pad(values, time)
    front = pad_mask(packet)[:4]
    if front.any():
        values[..., front] = 0
    return values
