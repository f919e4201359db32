"""The contraction stages lowered (docs/reference/diagnostics.md): ContractOuter, PacketReduce,
TimeReduce and LaneFold.

Each record fills its derived fields from its types itself (`of_types` in `tu_ops.contract`,
from `ir.rules.contract_geometry` and `ir.rules.time_reduction`, the computations OUTER-*,
PACKET-*, TIME-* and LANE-* check); a lowering only says which traced values it reads.

`to_trf`, which loads the contraction's weights, lowers to a TrfLoad the same way: the record
fills its geometry from its types (`TrfLoad.of_types`, `ir.rules.collect.trf_geometry`, the
computation TRF-1..5 use). `base_row` is filled by the allocation pass (visa/visa.lark, "TRF
allocation").
"""

from __future__ import annotations

from ir import ops as ir
from ir.errors import InternalError
from ir.rules.collect import trf_geometry
from ir.rules.contract_geometry import outer_geometry
from tu_ops.base import Ref
from tu_ops.contract import ContractOuter, LaneFold, PacketReduce, TimeReduce
from tu_ops.enums import CollectFlits
from tu_ops.lower.tables import Site, feeds, lowers
from tu_ops.trf import TrfLoad

__all__ = ["trf_flits"]


@feeds(ir.ContractOuter)
def _outer_flits(op: ir.ContractOuter) -> CollectFlits:
    """pack_size of the ContractOuter: the collect_flits of the feed that delivers to it."""
    return CollectFlits(outer_geometry(op.input.type, op.trf.type, op.time, op.packet).pack)


@lowers(ir.ContractOuter, into=ContractOuter)
def _outer_stage(op: ir.ContractOuter, site: Site) -> ContractOuter:
    return ContractOuter.of_types(Ref(site.result), Ref(site.src), Ref(site.ref(op.trf)), op.input.type,
                                  site.type_of(op.trf), op.result.type, op.loc)


@lowers(ir.ContractPacket)
def _packet_stage(op: ir.ContractPacket, site: Site) -> PacketReduce:
    return PacketReduce.of_types(Ref(site.result), Ref(site.src), op.input.type, op.result.type, op.loc)


@lowers(ir.ContractTime)
def _time_stage(op: ir.ContractTime, site: Site) -> TimeReduce:
    lane = site.chain.first(ir.ContractLane)
    if lane is None:
        raise InternalError(f"{op.text()}: contract_time without contract_lane")
    return TimeReduce.of_types(Ref(site.result), Ref(site.src), op.input.type, op.result.type, lane.mode, op.loc)


@lowers(ir.ContractLane)
def _lane_stage(op: ir.ContractLane, site: Site) -> LaneFold:
    return LaneFold.of_types(Ref(site.result), Ref(site.src), op.input.type, op.result.type, op.mode, op.loc)


@feeds(ir.ToTrf)
def trf_flits(op: ir.ToTrf) -> CollectFlits:
    """collect_flits of a TRF load: Flit2 when bytes per lane are a multiple of 64."""
    stream = op.input.type
    geo = trf_geometry(stream.dtype, stream.time, op.lane, op.element)
    if geo is None:
        raise InternalError(f"{op.text()}: no TRF geometry")
    return CollectFlits(geo.collect_flits)


@lowers(ir.ToTrf, into=TrfLoad)
def _trf_stage(op: ir.ToTrf, site: Site) -> TrfLoad:
    return TrfLoad.of_types(Ref(site.result), Ref(site.src), op.input.type, site.type_of(op.result), op.loc)
