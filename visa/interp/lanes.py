"""Front-lane passes: the steps after a pass's `NARROW_TRIM` run on the front four lanes only.

After the trim a 4-way stream keeps its cells in the front four lanes of each flit; the
back four hold zeros, or whatever a later element-wise step makes of zeros (exp(0) = 1),
until the end of the pass sets the output's padding to zero. When nothing after the trim
moves cells between lanes (no `NARROW_SPLIT` / `WIDEN_CONCAT`), a reduce reads the front
four lanes only, the stash is taken after the trim, and the output packet has its back four
lanes as padding, the back lanes never reach the result: the pass runs on `(rows, T, 4)`
values from its trim on, and `widen_front` puts them back in an 8-lane stream whose back
lanes are zero, the bytes the 8-lane run gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.units import spec_of
from visa.interp.memo import per_record
from visa.interp.values import pad_mask

__all__ = ["trim_at", "front_lanes", "widen_front"]

_MOVES = ("split", "concat")


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


def front_lanes(values: np.ndarray, operand: list[np.ndarray] | None) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """The stream and the VRF operands (one stored value per cell) on their front four lanes."""
    return values[..., :4], None if operand is None else [o[..., :4] for o in operand]


def widen_front(values: np.ndarray) -> np.ndarray:
    """(rows, T, 4) values -> (rows, T, 8), the back four lanes zero (a new array)."""
    out = np.zeros((*values.shape[:-1], 8), values.dtype)
    out[..., :4] = values
    return out
