"""When a type is a relabel of a register-file tensor's type (`v.reshape(VrfTensor[...])`,
`t.reshape(TrfTensor[...])`): the rules the traced op (`ir.rf_reshape`) and the lowered record
(`tu_ops.rf_reshape`) share. Imports no op module, so the interpreter's records may use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.diagnostic import Violation
from ir.mapping.live import live_positions
from ir.words import a_an

__all__ = ["relabel_problem"]

_SPATIAL = ("Chip", "Cluster", "Slice")


def _names(t: Any) -> tuple[str, ...]:
    return (*_SPATIAL, "Lane", "Element") if t.kind == "trf" else (*_SPATIAL, "Element")


def relabel_problem(old: Any, new: Any) -> Violation | None:
    """Why `new` is not a relabel of the register-file tensor type `old` (TYPE-6, VIEW-5,
    RFRESHAPE-1), or None."""
    if old.kind not in ("vrf", "trf"):
        return Violation("TYPE-6", f"`rf_reshape` relabels a VRF or TRF tensor, not {a_an(old.kind)} value",
                         help="reshape an HBM or DM tensor through its view: `t.view().reshape(...)`")
    if getattr(new, "kind", None) != old.kind:
        return Violation("TYPE-6", f"`reshape` keeps the kind of tensor: {new} is not {a_an(old.kind)} type",
                         help=f"pass {a_an('VrfTensor' if old.kind == 'vrf' else 'TrfTensor')}[...] type")
    if new.dtype != old.dtype:
        return Violation("TYPE-6", f"`reshape` keeps the element type {old.dtype}; the target has {new.dtype}",
                         help="a reshape relabels the words; convert values in a pass instead")
    for name, a, b in zip(_names(old), old.levels(), new.levels()):
        if a.size != b.size:
            return Violation("VIEW-5", f"reshape changes the size of the {name} level from {a.size} to {b.size}",
                             help="a reshape relabels the same cells: every level keeps its number of cells")
    for name, a, b in zip(_SPATIAL, old.spatial(), new.spatial()):
        if not np.array_equal(live_positions(a), live_positions(b)):
            return Violation("RFRESHAPE-1", f"reshape of {a_an(old.kind.upper())} tensor changes which positions of "
                             f"its {name} level hold data: {a} holds {len(live_positions(a))}, {b} "
                             f"{len(live_positions(b))}",
                             label="a register-file relabel reads no other slice's words",
                             help="keep the padding of Chip, Cluster and Slice where it is (naming the copies "
                                  "of a broadcast is fine)")
    return None
