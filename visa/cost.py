"""The cost summary of a VISA artifact (visa/visa.lark): counters derived from the records,
each adding what its class declares (`TuOp.cost_counters`, tu_ops/engines.py).

Every counter is per slice unless stated; the peaks are the MEM-3 / MEM-4 quantities of the
kernel's allocations (live DM bytes rounded up to 8 per tensor, live TRF rows x lanes x 32).
"""

from __future__ import annotations

from typing import Any

from ir.errors import InternalError
from tu_ops.program import LoweredKernel, live_by_step, resident_ranges
from visa.artifact import COST_KEYS

__all__ = ["compute_cost", "record_cost", "COST_KEYS"]


def compute_cost(kernel: LoweredKernel, target: Any) -> dict[str, int]:
    """The nine counters of visa/visa.lark, in printed order."""
    cost = dict.fromkeys(COST_KEYS, 0)
    for op in kernel.ops():
        _count(op, cost, target)
    cost["dm_peak_bytes"], cost["trf_peak_bytes"] = memory_peaks(kernel, target)
    return cost


def record_cost(op: Any, target: Any) -> dict[str, int]:
    """One record's contribution to the flow counters (the schedule model's inputs)."""
    cost = dict.fromkeys(COST_KEYS, 0)
    _count(op, cost, target)
    return cost


def _count(op: Any, cost: dict[str, int], target: Any) -> None:
    """Add one record's contribution, as its class declares it (`cost_counters`), to the flow counters."""
    for key, value in op.cost_counters(target).items():
        if key not in cost:
            raise InternalError(f"`{op.MNEMONIC}` declares an unknown cost counter `{key}`")
        cost[key] += value


def memory_peaks(kernel: LoweredKernel, target: Any) -> tuple[int, int]:
    """(DM, TRF) bytes per slice live at the busiest body step (MEM-3 / MEM-4); the resident
    DM parameters (ir/resident.py) hold their bytes at every step."""
    flit = target.constants.FLIT_BYTES
    resident = sum(-(-(b - a) // 8) * 8 for a, b in resident_ranges(kernel.params))
    dm_peak, trf_peak = resident, 0
    dm_live = live_by_step(kernel.dm_allocations, len(kernel.steps))
    trf_live = live_by_step(kernel.trf_allocations, len(kernel.steps))
    for step in range(len(kernel.steps)):
        dm = resident + sum(-(-a.size // 8) * 8 for a in dm_live[step])
        trf = sum(a.lanes * a.rows * flit for a in trf_live[step])
        dm_peak, trf_peak = max(dm_peak, dm), max(trf_peak, trf)
    return dm_peak, trf_peak
