"""The Vector Engine's pipeline stages: their order, which stage may follow which, how
many ops a cluster stage holds, where the stash may be written, and the ALU budget.

The intra-slice chain runs Tag -> Logic -> Fxp -> FxpToFp -> Narrow -> Fp ->
IntraSliceReduce -> FpDiv -> Widen -> FpToFxp -> Clip; a stream may skip stages but never
go back, and the four cluster stages (Logic, Fxp, Fp, Clip) may take several ops in a row.
Filter and Output end the chain. The inter-slice reducer (InterSliceReduce) either comes
first (then the chain may start at Tag) or follows one of Logic, Fxp, FxpToFp, Widen,
FpToFxp, Clip. Narrow through Widen run 4-way (the float path); the rest 8-way.
"""

from __future__ import annotations

import attrs

from ir.vector.enums import RngdAlu, Way
from ir.vector.errors import refuse
from ir.vector.variants import RustEnum, Unit

__all__ = ["VeStage", "INTRA_ORDER", "MAX_OPS", "STASHABLE", "can_transition", "stage_way", "AluBudget"]


class VeStage(RustEnum):
    """A stage of the Vector Engine pipeline (the reference's stage marker types)."""

    TAG, LOGIC, FXP, FXP_TO_FP = Unit("Tag"), Unit("Logic"), Unit("Fxp"), Unit("FxpToFp")
    NARROW, FP, INTRA_SLICE_REDUCE = Unit("Narrow"), Unit("Fp"), Unit("IntraSliceReduce")
    FP_DIV, WIDEN, FP_TO_FXP, CLIP = Unit("FpDiv"), Unit("Widen"), Unit("FpToFxp"), Unit("Clip")
    INTER_SLICE_REDUCE, FILTER, OUTPUT = Unit("InterSliceReduce"), Unit("Filter"), Unit("Output")


S = VeStage
INTRA_ORDER = (S.TAG, S.LOGIC, S.FXP, S.FXP_TO_FP, S.NARROW, S.FP, S.INTRA_SLICE_REDUCE, S.FP_DIV,
               S.WIDEN, S.FP_TO_FXP, S.CLIP)
MAX_OPS = {S.LOGIC: 5, S.FXP: 4, S.FP: 5, S.CLIP: 3}
STASHABLE = frozenset({S.TAG, S.LOGIC, S.FXP, S.NARROW, S.FP, S.FP_DIV, S.CLIP})
_TO_INTER = frozenset({S.LOGIC, S.FXP, S.FXP_TO_FP, S.WIDEN, S.FP_TO_FXP, S.CLIP})


def can_transition(src: VeStage, dst: VeStage) -> bool:
    """Whether a stream at stage `src` may enter stage `dst` next."""
    if src == S.INTER_SLICE_REDUCE:
        return dst in (S.TAG, S.FILTER, S.OUTPUT)
    if dst == S.INTER_SLICE_REDUCE:
        return src in _TO_INTER
    if dst == S.OUTPUT:
        return True
    if dst == S.FILTER:
        return src in INTRA_ORDER
    if src in (S.FILTER, S.OUTPUT) or dst == S.TAG:
        return False
    i, j = INTRA_ORDER.index(src), INTRA_ORDER.index(dst)
    return j > i or (j == i and src in MAX_OPS)


def stage_way(stage: VeStage) -> Way:
    """The packet width a stage leaves: the way its units declare (`ir.vector.units`); after
    Narrow and before Widen the stream is 4-way, every stage without a unit is 8-way."""
    from ir.vector.units import SPECS

    return Way.WAY4 if any(s.stage == stage and s.way_out == 4 for s in SPECS.values()) else Way.WAY8


@attrs.define
class AluBudget:
    """The ALUs one pass has used so far; `claim` refuses a second use (VE-ALU-1)."""

    used: set = attrs.field(factory=set)

    def claim(self, alu: RngdAlu, *, method: str | None = None) -> None:
        if alu in self.used:
            raise refuse("VE-ALU-1", f"{alu.rust_name} is already in use in this pass", method=method)
        self.used.add(alu)
