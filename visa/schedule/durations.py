"""Cycles of one record or one DMA from its fields and the model's rates.

A program is a pipeline: its records run at the same time on their own engines, each
taking one packet (or flit) per cycle, so a program lasts as long as its slowest stage
(no fill latency is modelled). A DMA pays a fixed startup per command, then moves its
bytes at the slowest of three rates: its DMA Engine (one 256-byte request per cycle),
HBM (weighted by the alignment penalties) and DM.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from tu_ops.dma import DmaCommand, DmaOp
from tu_ops.switch import switch_cycles
from visa.cost import record_cost
from visa.schedule.rates import Rates

__all__ = ["DmaCost", "dma_cost", "record_cycles"]


def _ceil(a: float, b: float) -> int:
    return int(math.ceil(a / b - 1e-9)) if a else 0


def record_cycles(op: Any, rates: Rates, target: Any) -> int:
    """Busy cycles of a program record on its engine."""
    tu = lambda key: rates("tensor_unit", key)  # noqa: E731 - a short reader
    name = op.MNEMONIC
    if name == "feed_buffer":
        cost = record_cost(op, target)
        cycles = max(_ceil(cost["feed_flits"], tu("fetch_flits_per_cycle")),
                     _ceil(cost["dm_read_bytes"], tu("fetch_bytes_per_cycle")))
        if op.switch is not None:  # the Switch Engine stage of the feed (tu_ops.switch)
            cycles = max(cycles, switch_cycles(op.switch, op.fetched_type().time.size, op.flits_per_packet))
        if any(x.dim.name == "SLICE" for x in op.lift or ()):  # slice bases: a compiler DMA of their offsets first
            cycles += int(rates("dma", "startup_cycles"))
        return cycles
    if name == "trf_load":
        return _ceil(op.lanes * op.bytes_per_lane, target.constants.FLIT_BYTES * tu("fetch_flits_per_cycle"))
    if name == "contract_outer":
        return _ceil(op.output_type.time.size, tu("packets_per_cycle"))
    if name == "lane_fold":
        return int(op.cycles)
    if name == "commit" and getattr(op, "pack", None) is not None:  # packed: one flit a step
        return _ceil(op.input_type.time.size, tu("commit_writes_per_cycle"))
    if name == "commit":
        return _ceil(math.prod(e.size for e in op.write.time), tu("commit_writes_per_cycle"))
    return _ceil(op.input_type.time.size, tu("packets_per_cycle"))


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


def _aligned(cmd: DmaCommand, side: str, align: int) -> bool:
    """Every packet of `cmd` starts on an `align`-byte boundary on `side` ("src"/"dst")."""
    base = cmd.src_base if side == "src" else cmd.dst_base
    strides = [(e.src_stride if side == "src" else e.dst_stride) for e in cmd.entries[:-1] if e.size > 1]
    return base % align == 0 and all(s % align == 0 for s in strides)


def _hbm_units(cmd: DmaCommand, side: str, writing: bool, rates: Rates) -> tuple[float, str]:
    """Weighted 256-byte HBM transactions of one command on `side`."""
    align = int(rates("hbm", "align_bytes"))
    packets = math.prod(e.size for e in cmd.entries) // max(cmd.packet_bytes, 1)
    full, rest = divmod(cmd.packet_bytes, align)
    aligned = _aligned(cmd, side, align)
    if not writing:
        units = full + (1 if rest else 0)
        if aligned:
            return packets * units, ""
        return packets * units * rates("hbm", "unaligned_read_factor"), "unaligned read"
    rmw = rates("hbm", "partial_write_factor")
    if not aligned:
        return packets * (full + (1 if rest else 0)) * rmw, "partial write"
    return packets * (full + (rmw if rest else 0)), "partial write" if rest else ""


def dma_cost(op: DmaOp, rates: Rates) -> DmaCost:
    """The cycles of a DMA record (its commands run one after another on one engine)."""
    src_hbm, dst_hbm = (tier == "hbm" for tier in op.kind.value)
    total = requests = hbm_bytes = dm_bytes = 0
    hbm_units, penalty = 0.0, ""
    req = rates("dma", "request_bytes")
    for cmd in op.commands:
        nbytes = math.prod(e.size for e in cmd.entries)
        packets = nbytes // max(cmd.packet_bytes, 1)
        total += nbytes
        requests += packets * _ceil(cmd.packet_bytes, req)
        for side, on_hbm, writing in (("src", src_hbm, False), ("dst", dst_hbm, True)):
            if on_hbm:
                units, why = _hbm_units(cmd, side, writing, rates)
                hbm_units, hbm_bytes, penalty = hbm_units + units, hbm_bytes + nbytes, penalty or why
            else:
                dm_bytes += nbytes
    startup = int(rates("dma", "startup_cycles")) * len(op.commands)
    engine = _ceil(requests * req, rates("dma", "engine_bytes_per_cycle"))
    hbm = _ceil(hbm_units * rates("hbm", "align_bytes"), rates("hbm", "chip_bytes_per_cycle"))
    dm = _ceil(dm_bytes, rates("dm", "chip_bytes_per_cycle"))
    return DmaCost(cycles=startup + max(engine, hbm, dm), startup=startup, engine_cycles=engine, hbm_cycles=hbm,
                   dm_cycles=dm, bytes=total, hbm_bytes=hbm_bytes, dm_bytes=dm_bytes, requests=requests,
                   hbm_penalty=penalty)
