"""The fetch lifts of a `feed_buffer` record (`lift=[...]`, docs/machine/fetch-lift.md): FEED-16.

Each item is one lift, outermost dimension first and each dimension once: the dimension,
its placement after the lift and the fetch time after it. The record's `input_type` is the
fetch's own stream (on the program's space); `fetched_type` is the stream the lifts leave,
on which the feed's read shape, mask and switch are stated. FEED-16 re-checks every lift
with the trace rules (LIFT-1 ... LIFT-6) against the record's own types and source element.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ir.fetch_lift import LiftDim, base_problem, lifted_space, placement_problem, time_problem
from ir.mapping.nodes import Mapping

__all__ = ["FeedLift", "fetched_type", "lift_problem"]


@attrs.frozen
class FeedLift:
    """`(DIM, "placement", "time")`: one lift, the dimension's placement and the fetch time
    after it."""

    TEXT_STYLE: ClassVar[str] = "tuple"
    dim: LiftDim
    placement: Mapping
    time: Mapping


def fetched_type(input_type: Any, lifts: tuple[FeedLift, ...] | None) -> Any:
    """`input_type` after the lifts: their placements in their dimensions, the last one's time."""
    if not lifts:
        return input_type
    chip, cluster, slice_ = lifted_space(input_type.spatial(), tuple((x.dim, x.placement) for x in lifts))
    return attrs.evolve(input_type, chip=chip, cluster=cluster, slice=slice_, time=lifts[-1].time)


def lift_problem(feed: Any, target: Any) -> str | None:
    """What is wrong with the feed's `lift=` items, or None."""
    lifts = feed.lift
    dims = [x.dim.value for x in lifts]
    if not lifts or dims != sorted(set(dims)):
        return f"lifts {[x.dim.name for x in lifts]}: at least one, outermost dimension first, each once"
    cur = feed.input_type
    for x in lifts:
        before = cur.spatial()[x.dim.value]
        found = (placement_problem(x.dim, before, x.placement)
                 or time_problem(x.dim, before, x.placement, cur.time, x.time, cur.packet))
        if found is not None:
            return f"{x.dim.name} lift: {found.code}: {found.message}"
        cur = fetched_type(cur, (x,))
    bits = target.bits_of(feed.source.dtype) or feed.source.dtype.bits
    found = base_problem(feed.input_type.spatial(), cur.spatial(), feed.source.element, bits)
    return None if found is None else f"{found.code}: {found.message}"
