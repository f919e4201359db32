"""What a `feed_buffer` costs: its busy cycles on the fetch engine and its cost counters
(declared on `tu_ops.feed.FeedBuffer`; see `tu_ops.engines`)."""

from __future__ import annotations

import math
from typing import Any

from tu_ops.engines import Rate, ceil_div
from tu_ops.switch import switch_cycles

__all__ = ["feed_counters", "feed_cycles"]


def feed_counters(op: Any, target: Any) -> dict[str, int]:
    """The flits it delivers and the DM bytes its read shapes read (rounded up per shape)."""
    bits = target.bits_of(op.source.dtype) or 0
    return {"feed_flits": op.beats * op.collect_flits.value,
            "dm_read_bytes": sum(-(-math.prod(e.size for e in s.entries()) * bits // 8) for s in op.shapes)}


def feed_cycles(op: Any, rate: Rate, target: Any) -> int:
    """The slowest of fetching its flits, reading its DM bytes and its Switch Engine pass."""
    cost = feed_counters(op, target)
    cycles = max(ceil_div(cost["feed_flits"], rate("tensor_unit", "fetch_flits_per_cycle")),
                 ceil_div(cost["dm_read_bytes"], rate("tensor_unit", "fetch_bytes_per_cycle")))
    if op.switch is not None:  # the Switch Engine stage of the feed (tu_ops.switch)
        cycles = max(cycles, switch_cycles(op.switch, op.fetched_type().time.size, op.flits_per_packet))
    if any(x.dim.name == "SLICE" for x in op.lift or ()):  # slice bases: a compiler DMA of their offsets first
        cycles += int(rate("dma", "startup_cycles"))
    return cycles
