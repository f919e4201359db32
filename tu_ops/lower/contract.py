"""The contraction stages lowered (docs/reference/diagnostics.md): ContractOuter, PacketReduce,
TimeReduce and LaneFold.

Every field comes from `ir.rules.contract_geometry` (`outer_geometry`, `packet_depth`,
`time_reduction`, `lane_geometry`), the computations OUTER-*, PACKET-*, TIME-* and LANE-*
check, so a traced kernel and its lowered ops cannot disagree.
"""

from __future__ import annotations

from typing import Any

from ir import ops as ir
from ir.errors import InternalError
from ir.types import LaneMode
from ir.rules.contract_geometry import lane_geometry, outer_geometry, packet_depth
from ir.rules.time_reduction import time_reduction
from tu_ops.base import Ref
from tu_ops.contract import ContractOuter, LaneFold, PacketReduce, TimeLoop, TimeReduce, TrfRead
from tu_ops.enums import CollectFlits, FeedElementType, LoopKind, Width
from tu_ops.lower.dispatch import Site, feeds, lowers

__all__ = ["outer_pack", "lower_outer", "lower_packet", "lower_time", "lower_lane"]


def _outer_geo(op: ir.ContractOuter) -> Any:
    try:
        return outer_geometry(op.input.type, op.trf.type, op.time, op.packet)
    except ValueError as e:
        raise InternalError(f"{op.text()}: {e}") from e


def outer_pack(op: ir.ContractOuter) -> int:
    """pack_size of the ContractOuter (the collect_flits of the feed that delivers to it)."""
    return _outer_geo(op).pack


def lower_outer(op: ir.ContractOuter, result: int, stream: int, weights: int, trf_type: Any,
                target: Any) -> ContractOuter:
    """The ContractOuter of `op`: stream adapter and TRF sequencer of docs/machine/contraction.md."""
    geo = _outer_geo(op)
    s = op.input.type
    out = op.result.type
    read = TrfRead(read_elems=geo.read_size, width=Width[geo.width], entries=geo.trf_walk,
                   packet_broadcast=geo.packet_broadcast)
    return ContractOuter(
        result=Ref(result), stream=Ref(stream), weights=Ref(weights),
        stream_type=FeedElementType.of(s.dtype), weight_type=FeedElementType.of(trf_type.dtype),
        mac_type=FeedElementType.of(out.acc), pack_size=geo.pack, lanes=geo.lanes,
        time_broadcast=geo.time_broadcast, trf_read=read, input_type=s, output_type=out, loc=op.loc)


def lower_packet(op: ir.ContractPacket, result: int, src: int) -> PacketReduce:
    """The PacketReduce of `op`: the smallest adder-tree depth of PACKET-4."""
    t = op.input.type
    depth = packet_depth(t.packet, op.packet)
    if depth is None:
        raise InternalError(f"{op.text()}: no packet depth")
    return PacketReduce(result=Ref(result), input=Ref(src), in_elems=t.packet.size, depth=depth,
                        out_cols=op.packet.size, input_type=t, output_type=op.result.type, loc=op.loc)


def lower_time(op: ir.ContractTime, result: int, src: int, mode: LaneMode) -> TimeReduce:
    """The TimeReduce of `op`: one loop per factor of the pre-reduce time, KEEP or REDUCE."""
    t = op.input.type
    try:
        red = time_reduction(t.time, op.time)
    except ValueError as e:
        raise InternalError(f"{op.text()}: {e}") from e
    loops = tuple(TimeLoop(size, LoopKind[kind]) for size, kind in red.entries)
    return TimeReduce(result=Ref(result), input=Ref(src), loops=loops, slots=red.slots, mode=mode,
                      input_type=t, output_type=op.result.type, loc=op.loc)


def lower_lane(op: ir.ContractLane, result: int, src: int) -> LaneFold:
    """The LaneFold of `op`: drain the accumulator by mode."""
    t = op.input.type
    try:
        geo = lane_geometry(t, op.time, op.packet, op.mode)
    except ValueError as e:
        raise InternalError(f"{op.text()}: {e}") from e
    return LaneFold(result=Ref(result), input=Ref(src), mode=op.mode, lanes=geo.lanes, cols=geo.cols,
                    cycles=geo.cycles, input_type=t, output_type=op.result.type, loc=op.loc)


# --- declarations: how each contraction stage lowers ----------------------------------------

@feeds(ir.ContractOuter)
def _outer_flits(op: ir.ContractOuter) -> CollectFlits:
    return CollectFlits(outer_pack(op))


@lowers(ir.ContractOuter, into=ContractOuter)
def _outer_stage(op: ir.ContractOuter, site: Site) -> ContractOuter:
    return lower_outer(op, site.result, site.src, site.ref(op.trf), site.type_of(op.trf), site.target)


@lowers(ir.ContractPacket)
def _packet_stage(op: ir.ContractPacket, site: Site) -> PacketReduce:
    return lower_packet(op, site.result, site.src)


@lowers(ir.ContractTime)
def _time_stage(op: ir.ContractTime, site: Site) -> TimeReduce:
    lane = site.chain.first(ir.ContractLane)
    if lane is None:
        raise InternalError(f"{op.text()}: contract_time without contract_lane")
    return lower_time(op, site.result, site.src, lane.mode)


@lowers(ir.ContractLane)
def _lane_stage(op: ir.ContractLane, site: Site) -> LaneFold:
    return lower_lane(op, site.result, site.src)
