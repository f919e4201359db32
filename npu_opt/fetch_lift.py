"""`fetch_chip_lift` / `fetch_cluster_lift` / `fetch_slice_lift`: a fetch base per placement
position (ir.fetch_lift, docs/machine/fetch-lift.md).

Offered right after `fetch`, outermost dimension first and each at most once: after a chip
lift the cluster and slice lifts, after a cluster lift the slice lift. A lifted stream then
takes the Fetch Adapter stages, `switch` or `collect`, like a fetch stream. Imported by
`npu_opt.stages` once its shared method bodies exist.
"""

from __future__ import annotations

from typing import Any

from ir.fetch_lift import LiftDim
from ir.fetch_lift_ops import LIFT_OPS
from ir.location import Location
from ir.mapping.nodes import Mapping
from ir.ops import Begin
from npu_opt.fetch_mask import FetchMaskStream, fetch_mask
from npu_opt.stagebase import StreamStage, kind_error, refuse_dead, stage_method
from npu_opt.trace import current

__all__ = ["fetch_chip_lift", "fetch_cluster_lift", "fetch_slice_lift", "FetchChipLiftStream",
           "FetchClusterLiftStream", "FetchSliceLiftStream"]


def _element(tracer: Any, value: Any) -> Mapping | None:
    """The DM element the stream's `begin` reads (its packet), found up the producers."""
    producer = {op.result.id: op for op in tracer.ops if op.result is not None}
    op = producer.get(value.id)
    while op is not None and not isinstance(op, Begin):
        src = getattr(op, "input", None)
        op = producer.get(src.id) if src is not None else None
    return None if op is None else op.result.type.packet


def _lift(self: StreamStage, loc: Location, dim: LiftDim, out_placement: Any, out_time: Any, after: type) -> Any:
    name = LIFT_OPS[dim].STAGE
    for arg, value in ((f"out_{dim.name.lower()}", out_placement), ("out_time", out_time)):
        if not isinstance(value, Mapping):
            return refuse_dead(self, loc, name,
                               kind_error(f"`{arg}` must be a mapping built by m(), not {type(value).__name__}"))
    tracer = current()
    op = LIFT_OPS[dim].build(tracer.value, input=self.value, loc=loc, out_placement=out_placement,
                             out_time=out_time, element=_element(tracer, self.value))
    tracer.emit(op)
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
