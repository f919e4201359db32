"""Stream stage objects: each class offers exactly the methods legal after its stage.

The adjacency is docs/porting.md. Shared methods are written once and placed in each class
body that offers them (`OFFERS` is derived from the bodies). Every call checks its arguments'
kinds (TYPE-6) and the dtype-dependent typestate (TYPE-2, TYPE-4, TYPE-5, npu_opt.stage_checks),
and emits the IR op, which types its own result and runs its rules (`ir/rules`). The stream
reads down the modules: this one holds its start (`begin`'s stream, `fetch`) and names every
stage class; npu_opt.collect_stages the adapters, `collect` and the contraction;
npu_opt.vector_engine the Vector Engine (loaded on first use); npu_opt.output_stages the cast,
transpose and commit stages every path ends with.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ir import ops
from ir.location import Location
from npu_opt.collect_stages import (CollectStream, ContractOuterStream, ContractPacketStream, ContractStream,
                                    ContractTimeStream, FetchCastStream, FetchTableLookupStream,
                                    FetchZeroPointSubStream, SwitchStream, _collect, _fetch_cast, _fetch_table_lookup,
                                    _fetch_zero_point_sub, _switch)
from npu_opt.output_stages import CastStream, CommitCastStream, CommitTrimStream, TransposeStream, VectorFinalStream
from npu_opt.stage_checks import _kind_fault
from npu_opt.stagebase import LazyStageMethod, StreamStage, next_stage, stage_method


# The fetch lifts and fetch_mask load on first use (npu_opt.stagebase.LazyStageMethod).
def _fetch_lift() -> ModuleType:
    from npu_opt import fetch_lift  # fetch_mask and the lifts
    return fetch_lift


__all__ = [
    "BeginStream", "FetchStream", "FetchTableLookupStream", "FetchCastStream",
    "FetchZeroPointSubStream", "CollectStream", "ContractOuterStream", "ContractPacketStream",
    "ContractTimeStream", "ContractStream", "VectorFinalStream", "CastStream", "TransposeStream",
    "CommitTrimStream", "CommitCastStream", "SwitchStream",
]

class BeginStream(StreamStage):
    """After `begin`: Time = 1, Packet = the DM element. Offers `fetch`."""
    AFTER = ops.Begin

    @stage_method("fetch")
    def fetch(self, loc: Location, time: Any, packet: Any) -> FetchStream:
        """Fetch Engine: read the slice's DM as (time, packet)."""
        fault = _kind_fault(time=time, packet=packet)
        return next_stage(self, loc, ops.Fetch, FetchStream, fault=fault, time=time, packet=packet)


class FetchStream(StreamStage):
    """After `fetch`: the lifts, the fetch adapters (each at most once, in order) or `collect`."""
    AFTER = ops.Fetch

    # their stage classes reuse the adapters' bodies (npu_opt.collect_stages): on first use
    fetch_chip_lift = LazyStageMethod("fetch_chip_lift", _fetch_lift)
    fetch_cluster_lift = LazyStageMethod("fetch_cluster_lift", _fetch_lift)
    fetch_slice_lift = LazyStageMethod("fetch_slice_lift", _fetch_lift)
    fetch_mask = LazyStageMethod("fetch_mask", _fetch_lift)
    fetch_table_lookup = _fetch_table_lookup
    fetch_cast = _fetch_cast
    fetch_zero_point_sub = _fetch_zero_point_sub
    switch = _switch
    collect = _collect
