"""Stream stage objects: each class offers exactly the methods legal after its stage.

The adjacency is docs/porting.md. Shared methods are written once below and placed in each
class body that offers them (`OFFERS` is derived from the bodies). Every call checks its
arguments' kinds (TYPE-6) and the dtype-dependent typestate (TYPE-2, TYPE-4, TYPE-5), and
emits the IR op, which types its own result and runs its rules (`ir/rules`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ir import data_movement_ops, ops
from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.location import Location
from ir.mapping.nodes import Mapping, pair_all, written
from ir.rules.collect import infer_trf
from npu_opt.padding_sums import refuse_summed_memory_padding
from npu_opt.stagebase import (LazyStageMethod, Poisoned, StreamStage, kind_error, next_stage, refuse_dead, stage_method,
                               trf_arguments_fault)
from npu_opt.switch_stage import switch_fault
from npu_opt.tensor_data import DmTensorData, TrfTensorData
from npu_opt.trace import current
from npu_opt.valid_count import commit_valid_count_pack
from npu_opt.views import commit_view
from npu_opt.vrf import to_vrf
from ir.words import a_an


# Stage method families loaded on first use (npu_opt.stagebase.LazyStageMethod); their
# modules import this one.
def _vector_stages() -> ModuleType:
    from npu_opt import vector_engine  # the VE stage classes
    return vector_engine


def _fetch_lift() -> ModuleType:
    from npu_opt import fetch_lift  # fetch_mask and the lifts
    return fetch_lift


_vector_init = LazyStageMethod("vector_init", _vector_stages)

__all__ = [
    "BeginStream", "FetchStream", "FetchTableLookupStream", "FetchCastStream",
    "FetchZeroPointSubStream", "CollectStream", "ContractOuterStream", "ContractPacketStream",
    "ContractTimeStream", "ContractStream", "VectorFinalStream", "CastStream", "TransposeStream",
    "CommitTrimStream", "CommitCastStream", "SwitchStream",
]

_STAGING = frozenset({DType.I5, DType.I9})
_MAC_TYPES = frozenset({DType.I4, DType.I5, DType.I8, DType.I9, DType.F8E4M3, DType.F8E5M2, DType.BF16})


# --- argument kinds (TYPE-6) -------------------------------------------------------------

def _kind_fault(**args: Any) -> Violation | None:
    """The first argument of the wrong kind; an argument that is itself the result of a
    refused call gives a silent fault (code ""), so refusals do not cascade."""
    for name, value in args.items():
        if isinstance(value, Poisoned):
            return Violation("", "argument comes from a refused call")
        want = _KINDS[name.rstrip("_")]
        if want is Mapping and not isinstance(value, Mapping):
            hint = f'write m("{value}")' if isinstance(value, str) else "build mappings with m(\"...\")"
            return kind_error(f"`{name}` must be a mapping built by m(), not {type(value).__name__}", hint)
        if want is DType and not isinstance(value, DType):
            return kind_error(f"`{name}` must be an npu-opt dtype such as bf16 or i8, not {value!r:.40}")
        if want is ops.LaneMode and not isinstance(value, ops.LaneMode):
            return kind_error(f"`mode` must be LaneMode.INTERLEAVED or LaneMode.SEQUENTIAL, not {value!r:.40}")
        if want is int and (isinstance(value, bool) or not isinstance(value, int)):
            return kind_error(f"`{name}` must be an int, not {type(value).__name__}")
        if want is TrfTensorData and not isinstance(value, TrfTensorData):
            return kind_error(f"`trf` must be a TRF tensor made by `.to_trf()`, not {type(value).__name__}")
    return None


_KINDS: dict[str, Any] = {"time": Mapping, "packet": Mapping, "out_time": Mapping, "out_packet": Mapping,
                          "out_slice": Mapping, "lane": Mapping, "element": Mapping,  # out_slice: the switch's
                          "dtype": DType, "mode": ops.LaneMode, "zero_point": int, "trf": TrfTensorData}



def _typestate(stage: StreamStage, name: str) -> Violation | None:
    """TYPE-2, then TYPE-4 / TYPE-5: methods offered only for some dtypes."""
    d = stage.type.dtype
    if d in _STAGING and name != "contract_outer":
        return Violation("TYPE-2", f"`{name}` cannot be called on {a_an(d)} stream",
                         label=f"{d} streams exist only to feed contract_outer",
                         help="i5/i9 come from fetch_zero_point_sub and may only be collected and "
                              "contracted; drop the zero-point subtraction to store or cast the data")
    if name == "contract_outer" and d not in _MAC_TYPES:
        return Violation("TYPE-4", f"`contract_outer` is not offered on {a_an(d)} stream",
                         help="contraction operands are i4, i5, i8, i9, f8e4m3, f8e5m2 or bf16")
    if name == "cast" and d not in (DType.I32, DType.F32):
        return Violation("TYPE-5", f"`cast` is not offered on {a_an(d)} stream",
                         help="the Cast Engine narrows i32 or f32 streams")
    return None


# --- shared method bodies ----------------------------------------------------------------

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


@stage_method("cast")
def _cast(self: StreamStage, loc: Location, dtype: Any, packet: Any) -> Any:
    """Cast Engine: narrow i32/f32 to `dtype`, re-padding the packet to one flit."""
    fault = _typestate(self, "cast") or _kind_fault(dtype=dtype, packet=packet)
    return next_stage(self, loc, ops.Cast, CastStream, fault=fault, dtype=dtype, packet=packet)


@stage_method("transpose")
def _transpose(self: StreamStage, loc: Location, out_time: Any, out_packet: Any) -> Any:
    """Transpose Engine: swap packet elements and time steps into (out_time, out_packet)."""
    fault = _typestate(self, "transpose") or _kind_fault(out_time=out_time, out_packet=out_packet)
    return next_stage(self, loc, data_movement_ops.Transpose, TransposeStream, fault=fault, out_time=out_time,
                      out_packet=out_packet)


@stage_method("switch")
def _switch(self: StreamStage, loc: Location, out_slice: Any, out_time: Any, config: Any) -> Any:
    """Switch Engine: route each slice's packets over the ring into (out_slice, out_time)."""
    fault = _kind_fault(out_slice=out_slice, out_time=out_time) or switch_fault(config)
    return next_stage(self, loc, data_movement_ops.Switch, SwitchStream, fault=fault, out_slice=out_slice,
                      out_time=out_time, config=config)


@stage_method("commit_trim")
def _commit_trim(self: StreamStage, loc: Location, packet: Any) -> Any:
    """Keep the leading `packet` cells of each flit so padding is not written."""
    fault = _typestate(self, "commit_trim") or _kind_fault(packet=packet)
    return next_stage(self, loc, ops.CommitTrim, CommitTrimStream, fault=fault, packet=packet)


def _commit_cast_impl(self: StreamStage, loc: Location, dtype: Any, relu: bool) -> Any:
    name = "commit_cast_relu" if relu else "commit_cast"
    fault = _kind_fault(dtype=dtype)
    if fault:
        return refuse_dead(self, loc, name, fault)
    return next_stage(self, loc, ops.CommitCast, CommitCastStream, dtype=dtype, relu=relu)


@stage_method("commit")
def _commit(self: StreamStage, loc: Location, element: Any = None) -> Any:
    """Write the stream into a new DM tensor laid out as `element` (default: [Time, Packet])."""
    t = self.type
    inferred = element is None
    if inferred:
        element = pair_all([t.time, t.packet])
    fault = _kind_fault(element=element)
    if fault:
        return refuse_dead(self, loc, "commit", fault)
    self.chain.done = True
    return DmTensorData.handle(next_stage(self, loc, ops.Commit, None, element=element, inferred=inferred))

# --- the stage classes (docs/porting.md) --------------------------------------------------

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

    # their stage classes reuse the bodies above, so their modules import this one: on first use
    fetch_chip_lift = LazyStageMethod("fetch_chip_lift", _fetch_lift)
    fetch_cluster_lift = LazyStageMethod("fetch_cluster_lift", _fetch_lift)
    fetch_slice_lift = LazyStageMethod("fetch_slice_lift", _fetch_lift)
    fetch_mask = LazyStageMethod("fetch_mask", _fetch_lift)
    fetch_table_lookup = _fetch_table_lookup
    fetch_cast = _fetch_cast
    fetch_zero_point_sub = _fetch_zero_point_sub
    switch = _switch
    collect = _collect


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


class VectorFinalStream(StreamStage):
    """After `vector_final`: offers `cast`, `transpose`, `commit_trim` and `to_vrf`."""

    cast = _cast
    transpose = _transpose
    commit_trim = _commit_trim
    to_vrf = to_vrf


class CastStream(StreamStage):
    """After `cast`: offers `transpose` and `commit_trim`."""
    AFTER = ops.Cast

    transpose = _transpose
    commit_trim = _commit_trim


class TransposeStream(StreamStage):
    """After `transpose`: offers only `commit_trim`."""
    AFTER = data_movement_ops.Transpose

    commit_trim = _commit_trim


@stage_method("commit_view")
def _commit_view(self: StreamStage, loc: Location, dst: Any) -> None:
    """Commit into the DM write view `dst` (docs/views.md)."""
    self.chain.done = True
    return commit_view(self, loc, dst, _commit.__wrapped__)


class CommitTrimStream(StreamStage):
    """After `commit_trim`: optional commit conversion, then `commit` or `commit_view`."""
    AFTER = ops.CommitTrim

    commit = _commit
    commit_view = _commit_view
    commit_valid_count_pack = commit_valid_count_pack

    @stage_method("commit_cast")
    def commit_cast(self, loc: Location, dtype: Any) -> Any:
        """Commit Adapter f32 -> bf16 (main context only)."""
        return _commit_cast_impl(self, loc, dtype, relu=False)

    @stage_method("commit_cast_relu")
    def commit_cast_relu(self, loc: Location, dtype: Any) -> Any:
        """Commit Adapter f32 -> bf16 with negative values clamped to +0 (main only)."""
        return _commit_cast_impl(self, loc, dtype, relu=True)


class CommitCastStream(StreamStage):
    """After `commit_cast`: offers `commit` and `commit_view`."""
    AFTER = ops.CommitCast

    commit = _commit
    commit_view = _commit_view
