"""The cost summary of a lowered kernel (artifacts.md 1.4), counters in canonical order.

Per slice unless stated: `dma_commands`, `dma_bytes` (product of each command's entry
sizes), `feed_flits` (beats x collect_flits), `dm_read_bytes` (feed read plans x source
bytes), `dm_write_bytes` (commit time sizes x valid_bytes), `trf_load_bytes`, `mac_ops`
(lanes x size(out_time) x size(out_packet)), and the MEM-3 / MEM-4 peaks.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["COST_KEYS", "cost"]

COST_KEYS = ("dma_commands", "dma_bytes", "feed_flits", "dm_read_bytes", "dm_write_bytes",
             "trf_load_bytes", "mac_ops", "dm_peak_bytes", "trf_peak_bytes")


def _peak(allocs: Any, steps: int, size: Any) -> int:
    return max((sum(size(a) for a in allocs if a.first_step <= s <= a.last_step) for s in range(steps)), default=0)


def cost(kernel: Any, target: Any) -> dict[str, int]:
    """Every counter of artifacts.md 1.4, in order."""
    out = dict.fromkeys(COST_KEYS, 0)
    for op in kernel.ops():
        m = op.MNEMONIC
        if m == "dma":
            out["dma_commands"] += len(op.commands)
            out["dma_bytes"] += sum(math.prod(e.size for e in cmd.entries) for cmd in op.commands)
        elif m == "feed_buffer":
            out["feed_flits"] += op.beats * op.collect_flits.value
            bits = target.bits_of(op.source.dtype) or op.source.dtype.bits
            out["dm_read_bytes"] += sum(math.prod(e.size for e in s.entries()) for s in op.shapes) * bits // 8
        elif m == "commit":
            out["dm_write_bytes"] += math.prod(e.size for e in op.write.time) * op.valid_bytes
        elif m == "trf_load":
            out["trf_load_bytes"] += op.lanes * op.bytes_per_lane
        elif m == "contract_outer":
            out["mac_ops"] += op.lanes * op.output_type.time.size * op.output_type.packet.size
    steps = len(kernel.steps)
    row = target.constants.FLIT_BYTES
    out["dm_peak_bytes"] = _peak(kernel.dm_allocations, steps, lambda a: -(-a.size // 8) * 8)
    out["trf_peak_bytes"] = _peak(kernel.trf_allocations, steps, lambda a: a.lanes * a.rows * row)
    return out
