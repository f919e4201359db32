"""The stream's last stages: the Vector Engine's exit (`vector_final`), `cast`, `transpose`,
`commit_trim`, the commit conversions and the commits (docs/porting.md). Below the engines
that lead here (npu_opt.vector_stages, npu_opt.collect_stages); a body is written once and
placed in each class body that offers it (`OFFERS` is derived from the bodies).
"""

from __future__ import annotations

from typing import Any

from ir import data_movement_ops, ops
from ir.location import Location
from ir.mapping.nodes import pair_all
from npu_opt.addresses import DM, at_stage
from npu_opt.stagebase import StreamStage, next_stage, refuse_dead, stage_method
from npu_opt.tensor_data import DmTensorData
from npu_opt.valid_count import commit_valid_count_pack
from npu_opt.views import commit_view
from npu_opt.vrf import to_vrf, to_vrf_at
from npu_opt.stage_checks import _kind_fault, _typestate

__all__ = ["VectorFinalStream", "CastStream", "TransposeStream", "CommitTrimStream", "CommitCastStream"]


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


_commit_at = at_stage(_commit, "commit_at", DM)  # `commit` at a DM byte address (npu_opt.addresses)


class VectorFinalStream(StreamStage):
    """After `vector_final`: offers `cast`, `transpose`, `commit_trim` and `to_vrf`."""

    cast = _cast
    transpose = _transpose
    commit_trim = _commit_trim
    to_vrf = to_vrf
    to_vrf_at = to_vrf_at


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
    commit_at = _commit_at
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
    commit_at = _commit_at
    commit_view = _commit_view
