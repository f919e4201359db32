"""The cycles of a DMA record in the schedule model (visa/schedule), from its commands and the rates.

A DMA pays a fixed startup per command (its commands run one after another on one DMA
Engine), then moves its bytes at the slowest of three rates: its DMA Engine (one
256-byte request per cycle), HBM (weighted by the alignment penalties) and DM.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from tu_ops.engines import Rate, ceil_div

__all__ = ["DmaCost", "dma_cost"]


@attrs.frozen
class DmaCost:
    """A DMA's cycles and the quantities they come from (all per chip)."""

    cycles: int
    startup: int
    engine_cycles: int
    hbm_cycles: int
    dm_cycles: int
    bytes: int
    hbm_bytes: int
    dm_bytes: int
    requests: int
    hbm_penalty: str    # "" or which penalty applied: "unaligned read", "partial write"


def _aligned(cmd: Any, side: str, align: int) -> bool:
    """Every packet of `cmd` (a `DmaCommand`) starts on an `align`-byte boundary on `side` ("src"/"dst")."""
    base = cmd.src_base if side == "src" else cmd.dst_base
    strides = [(e.src_stride if side == "src" else e.dst_stride) for e in cmd.entries[:-1] if e.size > 1]
    return base % align == 0 and all(s % align == 0 for s in strides)


def _hbm_units(cmd: Any, side: str, writing: bool, rate: Rate) -> tuple[float, str]:
    """Weighted 256-byte HBM transactions of one command on `side`."""
    align = int(rate("hbm", "align_bytes"))
    packets = math.prod(e.size for e in cmd.entries) // max(cmd.packet_bytes, 1)
    full, rest = divmod(cmd.packet_bytes, align)
    aligned = _aligned(cmd, side, align)
    if not writing:
        units = full + (1 if rest else 0)
        if aligned:
            return packets * units, ""
        return packets * units * rate("hbm", "unaligned_read_factor"), "unaligned read"
    rmw = rate("hbm", "partial_write_factor")
    if not aligned:
        return packets * (full + (1 if rest else 0)) * rmw, "partial write"
    return packets * (full + (rmw if rest else 0)), "partial write" if rest else ""


def dma_cost(op: Any, rate: Rate) -> DmaCost:
    """The cycles of a DMA record (a `DmaOp`: its commands run one after another on one engine)."""
    src_hbm, dst_hbm = (tier == "hbm" for tier in op.kind.value)
    total = requests = hbm_bytes = dm_bytes = 0
    hbm_units, penalty = 0.0, ""
    req = rate("dma", "request_bytes")
    for cmd in op.commands:
        nbytes = math.prod(e.size for e in cmd.entries)
        packets = nbytes // max(cmd.packet_bytes, 1)
        total += nbytes
        requests += packets * ceil_div(cmd.packet_bytes, req)
        for side, on_hbm, writing in (("src", src_hbm, False), ("dst", dst_hbm, True)):
            if on_hbm:
                units, why = _hbm_units(cmd, side, writing, rate)
                hbm_units, hbm_bytes, penalty = hbm_units + units, hbm_bytes + nbytes, penalty or why
            else:
                dm_bytes += nbytes
    startup = int(rate("dma", "startup_cycles")) * len(op.commands)
    engine = ceil_div(requests * req, rate("dma", "engine_bytes_per_cycle"))
    hbm = ceil_div(hbm_units * rate("hbm", "align_bytes"), rate("hbm", "chip_bytes_per_cycle"))
    dm = ceil_div(dm_bytes, rate("dm", "chip_bytes_per_cycle"))
    return DmaCost(cycles=startup + max(engine, hbm, dm), startup=startup, engine_cycles=engine, hbm_cycles=hbm,
                   dm_cycles=dm, bytes=total, hbm_bytes=hbm_bytes, dm_bytes=dm_bytes, requests=requests,
                   hbm_penalty=penalty)
