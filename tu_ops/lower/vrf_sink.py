"""Moving a VRF load later when the VRF would not hold every tensor live in program order.

The VRF allocation (`tu_ops.lower.vrf`) keeps a tensor from its load through its last reader.
A kernel that stores a tensor in the VRF several passes before it reads it keeps it live over
the passes in between, and may then ask for more than a slice's 8192 bytes (VRF-6) although
no pass needs them at once. When that happens, each program that only loads the VRF
(its sink a `vrf_load`) moves to just before the first pass that reads its tensor, provided
nothing in between writes the DM tensor it streams; the allocation then runs again on that
order. A kernel the allocation accepts as written keeps its order (and its artifact).
"""

from __future__ import annotations

from typing import Any

import attrs

from tu_ops.dma_view import dm_roots
from tu_ops.lower.errors import LoweringRefusal
from tu_ops.program import TuProgram

__all__ = ["fit_vrf"]


def fit_vrf(kernel: Any) -> Any:
    """`kernel`, or, if its VRF allocation refuses VRF-6, the kernel with its VRF loads sunk to
    their first readers when that order fits (else the first refusal stands)."""
    from tu_ops.lower.vrf_alloc import vrf_placement

    try:
        vrf_placement(kernel)
        return kernel
    except LoweringRefusal as e:
        if e.code != "VRF-6":
            raise
        first = e
    moved = _sink_loads(kernel)
    if moved is None:
        raise first
    try:
        vrf_placement(moved)
    except LoweringRefusal:
        raise first from None
    return moved


def _ops(step: Any) -> tuple:
    return step.ops if isinstance(step, TuProgram) else (step,)


def _is_load(step: Any) -> bool:
    return isinstance(step, TuProgram) and step.sink is not None and step.sink.MNEMONIC == "vrf_load"


def _sink_loads(kernel: Any) -> Any | None:
    """The steps with every VRF-loading program moved before its tensor's first reader (None:
    nothing moved). A program stays where it is if a step between writes a DM tensor it reads."""
    steps = list(kernel.steps)
    roots = dm_roots(kernel.ops())
    moved_any = False
    for load in [s for s in steps if _is_load(s)]:
        at = steps.index(load)
        tensor = load.sink.result.id
        reader = next((k for k in range(at + 1, len(steps))
                       if any(r.id == tensor for op in _ops(steps[k]) for r in getattr(op, "rf", ()))), None)
        if reader is None or reader == at + 1:
            continue
        reads = {roots.get(r.id, r.id) for r in load.ops[0].operands()}
        between = steps[at + 1:reader]
        if any(roots.get(op.result.id, op.result.id) in reads for s in between for op in _ops(s)):
            continue
        steps.insert(reader - 1, steps.pop(at))
        moved_any = True
    if not moved_any:
        return None
    return attrs.evolve(kernel, steps=steps)
