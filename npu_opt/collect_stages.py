"""The stream from the fetch adapters to `collect` and the contraction: the fetch adapters
(`fetch_table_lookup`, `fetch_cast`, `fetch_zero_point_sub`), `switch`, `collect`, `to_trf` and
the contraction's stages, up to the Vector Engine's entry (`vector_init`, loaded on first use)
and the last stages (npu_opt.output_stages). npu_opt.fetch_lift's classes reuse the adapters'
bodies; npu_opt.stages (`begin`, `fetch`) leads here.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ir import data_movement_ops, ops
from ir.diagnostic import Violation
from ir.location import Location
from ir.mapping.nodes import written
from ir.rules.collect import infer_trf
from npu_opt.addresses import TRF, at_stage
from npu_opt.padding_sums import refuse_summed_memory_padding
from npu_opt.stagebase import (LazyStageMethod, Poisoned, StreamStage, next_stage, refuse_dead, stage_method,
                               trf_arguments_fault)
from npu_opt.switch_stage import switch_fault
from npu_opt.tensor_data import TrfTensorData
from npu_opt.trace import current
from npu_opt.vrf import to_vrf, to_vrf_at
from npu_opt.output_stages import _cast, _commit_trim, _transpose
from npu_opt.stage_checks import _kind_fault, _typestate

__all__ = ["FetchTableLookupStream", "FetchCastStream", "FetchZeroPointSubStream", "SwitchStream", "CollectStream",
           "ContractOuterStream", "ContractPacketStream", "ContractTimeStream", "ContractStream"]


# The Vector Engine's family loads on first use (npu_opt.stagebase.LazyStageMethod): its
# stage classes are many (~0.1 s to import) and most kernels' streams never enter it.
def _vector_stages() -> ModuleType:
    from npu_opt import vector_engine  # the VE stage classes
    return vector_engine


_vector_init = LazyStageMethod("vector_init", _vector_stages)


@stage_method("fetch_table_lookup")
def _fetch_table_lookup(self: StreamStage, loc: Location, dtype: Any) -> Any:
    """Decode every element through the fixed table from this dtype to `dtype` (main only)."""
    return next_stage(self, loc, ops.FetchTableLookup, FetchTableLookupStream, fault=_kind_fault(dtype=dtype),
                      dtype=dtype)


@stage_method("fetch_cast")
def _fetch_cast(self: StreamStage, loc: Location, dtype: Any) -> Any:
    """Convert every element to `dtype` (docs/numerics.md); `fetch_cast(D)` on D is a no-op."""
    return next_stage(self, loc, ops.FetchCast, FetchCastStream, fault=_kind_fault(dtype=dtype), dtype=dtype)


@stage_method("fetch_zero_point_sub")
def _fetch_zero_point_sub(self: StreamStage, loc: Location, dtype: Any, zero_point: Any) -> Any:
    """Subtract `zero_point` and widen to the staging type i5 / i9."""
    fault = _kind_fault(dtype=dtype, zero_point=zero_point)
    return next_stage(self, loc, ops.FetchZeroPointSub, FetchZeroPointSubStream, fault=fault, dtype=dtype,
                      zero_point=zero_point)


@stage_method("collect")
def _collect(self: StreamStage, loc: Location, time: Any, packet: Any) -> Any:
    """Pad the packet to whole 32-byte flits and move the flit count into time."""
    fault = _kind_fault(time=time, packet=packet)
    return next_stage(self, loc, ops.Collect, CollectStream, fault=fault, time=time, packet=packet)


@stage_method("switch")
def _switch(self: StreamStage, loc: Location, out_slice: Any, out_time: Any, config: Any) -> Any:
    """Switch Engine: route each slice's packets over the ring into (out_slice, out_time)."""
    fault = _kind_fault(out_slice=out_slice, out_time=out_time) or switch_fault(config)
    return next_stage(self, loc, data_movement_ops.Switch, SwitchStream, fault=fault, out_slice=out_slice,
                      out_time=out_time, config=config)


class FetchTableLookupStream(StreamStage):
    """After `fetch_table_lookup`."""
    AFTER = ops.FetchTableLookup

    fetch_cast = _fetch_cast
    fetch_zero_point_sub = _fetch_zero_point_sub
    switch = _switch
    collect = _collect


class FetchCastStream(StreamStage):
    """After `fetch_cast`."""
    AFTER = ops.FetchCast

    fetch_zero_point_sub = _fetch_zero_point_sub
    switch = _switch
    collect = _collect


class FetchZeroPointSubStream(StreamStage):
    """After `fetch_zero_point_sub`: an i5/i9 stream, which only `switch` and `collect` accept."""
    AFTER = ops.FetchZeroPointSub

    switch = _switch
    collect = _collect


class SwitchStream(StreamStage):
    """After `switch`: offers only `collect`."""
    AFTER = data_movement_ops.Switch

    collect = _collect


class CollectStream(StreamStage):
    """After `collect`: one flit per time step."""
    AFTER = ops.Collect

    cast = _cast
    transpose = _transpose
    commit_trim = _commit_trim
    vector_init = _vector_init
    to_vrf = to_vrf
    to_vrf_at = to_vrf_at

    @stage_method("to_trf")
    def to_trf(self, loc: Location, lane: Any = None, element: Any = None) -> Any:
        """Store the stream in the TRF as (lane, element); both are inferred when omitted."""
        fault = _typestate(self, "to_trf")
        if fault:
            return refuse_dead(self, loc, "to_trf", fault)
        args = {k: v for k, v in (("lane", lane), ("element", element)) if v is not None}
        fault = _kind_fault(**args)
        if fault:
            return refuse_dead(self, loc, "to_trf", fault)
        t = self.type
        if lane is None or element is None:
            inferred_lane, inferred_element = infer_trf(t.time, t.packet, lane)
        if lane is None and element is not None:
            current().refuse(Violation(
                "TRF-7", "`to_trf` was given `element` without `lane`",
                help=f'pass both, e.g. `.to_trf(m("{written(inferred_lane)}"), m("{written(inferred_element)}"))`'),
                loc, "to_trf")
            self.chain.dead = True
            return Poisoned("to_trf")
        facts = {"inferred_lane": lane is None, "inferred_element": element is None}
        lane = inferred_lane if lane is None else lane
        element = inferred_element if element is None else element
        self.chain.done = True
        return TrfTensorData.handle(next_stage(self, loc, ops.ToTrf, None, lane=lane, element=element, **facts))

    to_trf_at = at_stage(to_trf, "to_trf_at", TRF)  # `to_trf` in the TrfAddress's part (npu_opt.addresses)

    @stage_method("contract_outer")
    def contract_outer(self, loc: Location, trf: Any, time: Any, packet: Any, lane: Any = None,
                       trf_element: Any = None, trfd: Any = None) -> Any:
        """Outer product with a TRF tensor into (lane, time, packet) of the accumulator type;
        `lane`, `trf_element`, `trfd`: type arguments the TRF fixes (`trf_arguments_fault`)."""
        fault = _typestate(self, "contract_outer") or _kind_fault(trf=trf, time=time, packet=packet)
        fault = fault or trf_arguments_fault(trf, lane, trf_element, trfd)
        return next_stage(self, loc, ops.ContractOuter, ContractOuterStream, fault=fault, trf=trf.value, time=time,
                          packet=packet)


class ContractOuterStream(StreamStage):
    """After `contract_outer`: offers `contract_packet`."""
    AFTER = ops.ContractOuter

    @stage_method("contract_packet")
    def contract_packet(self, loc: Location, packet: Any) -> Any:
        """Packet Reducer: sum adjacent pairs inside the packet down to `packet`."""
        if fault := _kind_fault(packet=packet):
            return refuse_dead(self, loc, "contract_packet", fault)
        return refuse_summed_memory_padding(next_stage(self, loc, ops.ContractPacket, ContractPacketStream,
                                                       packet=packet))


class ContractPacketStream(StreamStage):
    """After `contract_packet`: offers `contract_time`."""
    AFTER = ops.ContractPacket

    @stage_method("contract_time")
    def contract_time(self, loc: Location, time: Any) -> Any:
        """Time Reducer: keep the factors of `time`, accumulate the others in time order."""
        fault = _kind_fault(time=time)
        return next_stage(self, loc, ops.ContractTime, ContractTimeStream, fault=fault, time=time)


class ContractTimeStream(StreamStage):
    """After `contract_time`: offers `contract_lane`."""
    AFTER = ops.ContractTime

    @stage_method("contract_lane")
    def contract_lane(self, loc: Location, time: Any, packet: Any, mode: Any) -> Any:
        """Lane Folder: move Lane into the stream, INTERLEAVED or SEQUENTIAL."""
        fault = _kind_fault(time=time, packet=packet, mode=mode)
        return next_stage(self, loc, ops.ContractLane, ContractStream, fault=fault, time=time, packet=packet, mode=mode)


class ContractStream(StreamStage):
    """After `contract_lane`: an i32/f32 stream; offers `cast`, `transpose`, `commit_trim` and
    `vector_init`."""
    AFTER = ops.ContractLane

    cast = _cast
    transpose = _transpose
    commit_trim = _commit_trim
    vector_init = _vector_init
