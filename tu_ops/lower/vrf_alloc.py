"""The VRF allocation: each VRF tensor gets the lowest word at which it overlaps no VRF tensor
live at its step (live from its load, or its `tensor_new`, through the last pass reading it);
one that does not fit is VRF-6. Apart from the VRF lowering (tu_ops/lower/vrf.py) so that the
allocation pass and the schedule need no Vector Engine."""

from __future__ import annotations

from typing import Any

import attrs

from ir.regions import extend_reads, loops
from tu_ops.lower.errors import LoweringRefusal, refusal, stage_of
from tu_ops.program import TuProgram
from tu_ops.rf_reshape import rf_aliases
from ir.machine import constants
from tu_ops.vrf_memory import vrf_words

__all__ = ["allocate_vrf", "vrf_placement"]


def _liveness(kernel: Any) -> dict[int, list]:
    """VRF tensor id -> [load, first step, last step]."""
    live: dict[int, list] = {}
    root = rf_aliases(kernel.ops())  # a relabel's result -> the tensor it names
    for step, s in enumerate(kernel.steps):
        for op in (s.ops if isinstance(s, TuProgram) else (s,)):
            if vrf_words(op) is not None:  # a vrf_load, or a VRF tensor made by new()
                live[op.result.id] = [op, step, step]
            elif hasattr(op, "rf_read"):  # a pass that reads the VRF (vector_rf, vector_branch_rf, ...)
                for ref in op.rf:
                    r = root.get(ref.id, ref.id)
                    if r in live:
                        live[r][2] = max(live[r][2], step)
    last = extend_reads({r: v[2] for r, v in live.items()}, {r: v[1] for r, v in live.items()},
                        loops(kernel.steps))   # read in a rolled loop's body: by every iteration
    return {r: [v[0], v[1], last[r]] for r, v in live.items()}


def _place(ref: int, live: dict[int, list], base: dict[int, int]) -> int:
    load, first, _ = live[ref]
    words = vrf_words(load)
    busy = [(base[o], base[o] + vrf_words(live[o][0])) for o in base if live[o][1] <= first <= live[o][2]]
    capacity = constants().VRF_BYTES // 4  # the lowering's target (tu_ops.lower.api)
    for start in sorted({0, *(b for _, b in busy)}):
        if start + words <= capacity and all(start + words <= a or b <= start for a, b in busy):
            return start
    held = sum(b - a for a, b in busy)
    raise LoweringRefusal([refusal(
        "VRF-6", f"VRF over-subscribed: {words * 4} bytes requested, {held * 4} of {capacity * 4} bytes "
                 "per slice held by live VRF tensors", load.loc, stage=stage_of(load), op=load.text(),
        label=f"needs {words * 4} bytes of VRF in each slice",
        help="finish the passes that read an earlier VRF tensor before storing this one, or store less")])


def vrf_placement(kernel: Any) -> dict[int, int]:
    """The `base` word of every `vrf_load` and VRF `tensor_new` (by result id) the allocation
    gives (VRF-6 when one does not fit); a `tensor_new` has no field for it."""
    live = _liveness(kernel)
    base: dict[int, int] = {}
    for ref in sorted(live, key=lambda r: (live[r][1], r)):
        base[ref] = _place(ref, live, base)
    return base


def allocate_vrf(kernel: Any) -> Any:
    """Fill every `vrf_load`'s `base` (refusing VRF-6)."""
    base = vrf_placement(kernel)
    if not base:
        return kernel
    steps = []
    for s in kernel.steps:
        if isinstance(s, TuProgram):
            s = attrs.evolve(s, ops=[attrs.evolve(op, base=base[op.result.id]) if op.MNEMONIC == "vrf_load" else op
                                     for op in s.ops])
        steps.append(s)
    return attrs.evolve(kernel, steps=steps)
