"""The cost summary of a VISA artifact (visa/visa.lark): counters derived from the records.

Every counter is per slice unless stated; the peaks are the MEM-3 / MEM-4 quantities of the
kernel's allocations (live DM bytes rounded up to 8 per tensor, live TRF rows x lanes x 32).
"""

from __future__ import annotations

import math
from typing import Any

from tu_ops.program import LoweredKernel
from visa.artifact import COST_KEYS

__all__ = ["compute_cost", "record_cost", "COST_KEYS"]


def _ceil_bytes(elements: int, bits: int) -> int:
    return -(-elements * bits // 8)


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
    """Add one record's contribution to the flow counters."""
    name = op.MNEMONIC
    if name in ("dma", "dma_window", "dma_into", "dma_gather", "dma_scatter", "dma_shuffle"):
        cost["dma_commands"] += len(op.commands)
        cost["dma_bytes"] += sum(math.prod(e.size for e in cmd.entries) for cmd in op.commands)
    elif name == "feed_buffer":
        cost["feed_flits"] += op.beats * op.collect_flits.value
        bits = target.bits_of(op.source.dtype) or 0
        cost["dm_read_bytes"] += sum(_ceil_bytes(math.prod(e.size for e in s.entries()), bits)
                                     for s in op.shapes)
    elif name == "commit" and getattr(op, "pack", None) is not None:  # packed: the counted cells only
        cost["dm_write_bytes"] += _ceil_bytes(op.output_type.element.size, target.bits_of(op.output_type.dtype) or 0)
    elif name == "commit":
        cost["dm_write_bytes"] += math.prod(e.size for e in op.write.time) * op.valid_bytes
    elif name == "trf_load":
        cost["trf_load_bytes"] += op.lanes * op.bytes_per_lane
    elif name == "contract_outer":
        cost["mac_ops"] += op.lanes * op.output_type.time.size * op.output_type.packet.size


def memory_peaks(kernel: LoweredKernel, target: Any) -> tuple[int, int]:
    """(DM, TRF) bytes per slice live at the busiest body step (MEM-3 / MEM-4)."""
    flit = target.constants.FLIT_BYTES
    dm_peak = trf_peak = 0
    for step in range(len(kernel.steps)):
        dm = sum(-(-a.size // 8) * 8 for a in kernel.dm_allocations if a.live_at(step))
        trf = sum(a.lanes * a.rows * flit for a in kernel.trf_allocations if a.live_at(step))
        dm_peak, trf_peak = max(dm_peak, dm), max(trf_peak, trf)
    return dm_peak, trf_peak
