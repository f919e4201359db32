"""The stages offered right after `fetch`: `fetch_mask` (ir.fetch_mask) and the lifts
`fetch_chip_lift` / `fetch_cluster_lift` / `fetch_slice_lift`, a fetch base per placement
position (ir.fetch_lift, docs/machine/fetch-lift.md).

`fetch_mask(out_time, out_packet)` is the Fetch Adapter's masking stage; the masked stream
then takes the other adapters, `switch` or `collect`, like a fetch stream. The lifts come
outermost dimension first and each at most once: after a chip lift the cluster and slice
lifts, after a cluster lift the slice lift. A lifted stream then takes the Fetch Adapter
stages (`fetch_mask` too), `switch` or `collect`, like a fetch stream. Imported by
`npu_opt.stages` once its shared method bodies exist (they are these stages' methods too).
"""

from __future__ import annotations

from typing import Any

from ir.fetch_lift import LiftDim
from ir.fetch_lift_ops import LIFT_OPS
from ir.fetch_mask_ops import FetchMask
from ir.location import Location
from ir.mapping.nodes import Mapping
from ir.ops import Begin
from npu_opt import collect_stages as _st
from npu_opt.stagebase import StreamStage, emit_op, kind_error, next_stage, refuse_dead, stage_method
from npu_opt.trace import current

__all__ = ["fetch_mask", "FetchMaskStream", "fetch_chip_lift", "fetch_cluster_lift", "fetch_slice_lift",
           "FetchChipLiftStream", "FetchClusterLiftStream", "FetchSliceLiftStream"]


def _not_mappings(stage: StreamStage, loc: Location, name: str, **named: Any) -> Any:
    """The TYPE-6 refusal of `name` (the chain ends) for the first of the `named` arguments
    that is not a mapping; None when all are."""
    for arg, value in named.items():
        if not isinstance(value, Mapping):
            return refuse_dead(stage, loc, name,
                               kind_error(f"`{arg}` must be a mapping built by m(), not {type(value).__name__}"))
    return None


@stage_method("fetch_mask")
def fetch_mask(self: StreamStage, loc: Location, out_time: Any, out_packet: Any) -> Any:
    """Zero the padding of one axis: `out_time` / `out_packet` are the fetch's mappings with
    that axis's `#` written `#{0}`."""
    return _not_mappings(self, loc, "fetch_mask", out_time=out_time, out_packet=out_packet) or next_stage(
        self, loc, FetchMask, FetchMaskStream, out_time=out_time, out_packet=out_packet)


class FetchMaskStream(StreamStage):
    """After `fetch_mask`: the later adapters, `switch` or `collect`."""

    fetch_table_lookup = _st._fetch_table_lookup
    fetch_cast = _st._fetch_cast
    fetch_zero_point_sub = _st._fetch_zero_point_sub
    switch = _st._switch
    collect = _st._collect


def _element(tracer: Any, value: Any) -> Mapping | None:
    """The DM element the stream's `begin` reads (its packet), found up the producers."""
    producer = {op.result.id: op for op in tracer.ops if op.result is not None}
    op = producer.get(value.id)
    while op is not None and not isinstance(op, Begin):
        src = getattr(op, "input", None)
        op = producer.get(src.id) if src is not None else None
    return None if op is None else op.result.type.packet


def _lift(self: StreamStage, loc: Location, dim: LiftDim, out_placement: Any, out_time: Any, after: type) -> Any:
    bad = _not_mappings(self, loc, LIFT_OPS[dim].STAGE, **{f"out_{dim.name.lower()}": out_placement},
                        out_time=out_time)
    if bad is not None:
        return bad
    op = emit_op(self, loc, LIFT_OPS[dim], out_placement=out_placement, out_time=out_time,
                 element=_element(current(), self.value))
    return after(op.result, self.chain)


@stage_method("fetch_chip_lift")
def fetch_chip_lift(self: StreamStage, loc: Location, out_chip: Any, out_time: Any) -> Any:
    """Give each chip its own fetch base: `out_chip` fills broadcasts of the Chip placement with
    axes the fetch time walked, and `out_time` is the time without them."""
    return _lift(self, loc, LiftDim.CHIP, out_chip, out_time, FetchChipLiftStream)


@stage_method("fetch_cluster_lift")
def fetch_cluster_lift(self: StreamStage, loc: Location, out_cluster: Any, out_time: Any) -> Any:
    """Give each cluster its own fetch base (as `fetch_chip_lift`, on the Cluster placement)."""
    return _lift(self, loc, LiftDim.CLUSTER, out_cluster, out_time, FetchClusterLiftStream)


@stage_method("fetch_slice_lift")
def fetch_slice_lift(self: StreamStage, loc: Location, out_slice: Any, out_time: Any) -> Any:
    """Give each slice its own fetch base (as `fetch_chip_lift`, on the Slice placement)."""
    return _lift(self, loc, LiftDim.SLICE, out_slice, out_time, FetchSliceLiftStream)


class _LiftedStream(FetchMaskStream):
    """What every lifted stream offers (each class inherits it): the Fetch Adapter stages,
    `switch` or `collect` (a masked stream's, and `fetch_mask`)."""

    fetch_mask = fetch_mask


class FetchSliceLiftStream(_LiftedStream):
    """After `fetch_slice_lift`: the Fetch Adapter stages, `switch` or `collect`."""


class FetchClusterLiftStream(_LiftedStream):
    """After `fetch_cluster_lift`: the slice lift, or what follows it."""

    fetch_slice_lift = fetch_slice_lift


class FetchChipLiftStream(_LiftedStream):
    """After `fetch_chip_lift`: the cluster and slice lifts, or what follows them."""

    fetch_cluster_lift = fetch_cluster_lift
    fetch_slice_lift = fetch_slice_lift
