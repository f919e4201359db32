"""The traced ops of the fetch lifts (`ir.fetch_lift` holds their rules and base offsets)."""

from __future__ import annotations

from typing import ClassVar

import attrs

from ir.diagnostic import Violation
from ir.fetch_lift import LiftDim, base_problem, placement_problem, time_problem
from ir.mapping.nodes import IDENTITY, Mapping
from ir.op_frame import attr, fact
from ir.ops import InputOp
from ir.rules.fetch import _fetch_7, _fetch_placed, _fetch_plan_limits
from ir.rules.read_plan import ReadPlan, match_read
from ir.types import Type

__all__ = ["FetchLift", "FetchChipLift", "FetchClusterLift", "FetchSliceLift", "check_lift", "LIFT_OPS"]


def check_lift(op: FetchLift) -> Violation | None:
    """LIFT-1 ... LIFT-5 on the placement and time, FETCH-7 on the lifted stream; with the DM
    element the fetch reads (a fact the DSL records), FETCH-2 (the lifted read is placeable),
    LIFT-6 on the bases and FETCH-4/5 on the lifted read plan."""
    t = op.input.type
    before = t.spatial()[op.DIM.value]
    found = (placement_problem(op.DIM, before, op.out_placement)
             or time_problem(op.DIM, before, op.out_placement, t.time, op.out_time, t.packet))
    after = op.infer_type()
    found = found or _fetch_7(after, op.out_time, t.packet)  # the lifted stream places no digit twice
    if found is not None or op.element is None:
        return found
    begun = attrs.evolve(t, time=IDENTITY, packet=op.element)
    found = (_fetch_placed(begun, op.out_time, t.packet)
             or base_problem(t.spatial(), after.spatial(), op.element, t.dtype.bits))
    if found is not None:
        return found
    plan = match_read(IDENTITY, op.element, op.out_time, t.packet)
    return _fetch_plan_limits(plan) if isinstance(plan, ReadPlan) else None


@attrs.frozen(kw_only=True)
class FetchLift(InputOp):
    """A fetch lift: each position of one placement dimension reads from its own base.
    `out_placement` replaces that dimension's broadcasts with axes `out_time` no longer walks."""

    DIM: ClassVar[LiftDim] = LiftDim.SLICE
    FEED = True
    RULES = (check_lift,)
    out_placement: Mapping = attr()
    out_time: Mapping = attr()
    element: Mapping | None = fact()  # the DM element the fetch reads (LIFT-6), from the DSL

    def infer_type(self) -> Type:
        return attrs.evolve(self.input.type, **{self.DIM.name.lower(): self.out_placement}, time=self.out_time)


@attrs.frozen(kw_only=True)
class FetchChipLift(FetchLift):
    """`fetch_chip_lift(out_chip, out_time)`: a base per chip."""

    STAGE = "fetch_chip_lift"
    DIM = LiftDim.CHIP


@attrs.frozen(kw_only=True)
class FetchClusterLift(FetchLift):
    """`fetch_cluster_lift(out_cluster, out_time)`: a base per cluster."""

    STAGE = "fetch_cluster_lift"
    DIM = LiftDim.CLUSTER


@attrs.frozen(kw_only=True)
class FetchSliceLift(FetchLift):
    """`fetch_slice_lift(out_slice, out_time)`: a base per slice."""

    STAGE = "fetch_slice_lift"
    DIM = LiftDim.SLICE


LIFT_OPS: dict[LiftDim, type[FetchLift]] = {cls.DIM: cls for cls in (FetchChipLift, FetchClusterLift, FetchSliceLift)}
