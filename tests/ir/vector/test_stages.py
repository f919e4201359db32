"""The stage order and transition table of the Vector Engine pipeline."""

from __future__ import annotations

import pytest

from ir.vector import FpBinaryOp, FpMulAlu, FxpBinaryOp, VectorRuleError, Way
from ir.vector.stages import INTRA_ORDER, MAX_OPS, STASHABLE, AluBudget, VeStage, can_transition, stage_way

S = VeStage

# (src, dst) pairs of the reference's transition table, a sample spanning every rule
ALLOWED = [(S.TAG, S.LOGIC), (S.LOGIC, S.LOGIC), (S.TAG, S.CLIP), (S.FXP, S.FXP), (S.NARROW, S.FP),
           (S.FP, S.FP), (S.INTRA_SLICE_REDUCE, S.FP_DIV), (S.FP_DIV, S.WIDEN), (S.WIDEN, S.FP_TO_FXP),
           (S.CLIP, S.CLIP), (S.CLIP, S.FILTER), (S.FILTER, S.OUTPUT), (S.OUTPUT, S.OUTPUT),
           (S.INTER_SLICE_REDUCE, S.TAG), (S.INTER_SLICE_REDUCE, S.OUTPUT), (S.CLIP, S.INTER_SLICE_REDUCE),
           (S.FXP_TO_FP, S.INTER_SLICE_REDUCE), (S.TAG, S.OUTPUT)]
REFUSED = [(S.FXP, S.LOGIC), (S.NARROW, S.FXP_TO_FP), (S.TAG, S.TAG), (S.NARROW, S.NARROW),
           (S.INTRA_SLICE_REDUCE, S.INTRA_SLICE_REDUCE), (S.FP, S.INTER_SLICE_REDUCE),
           (S.TAG, S.INTER_SLICE_REDUCE), (S.FILTER, S.CLIP), (S.INTER_SLICE_REDUCE, S.LOGIC),
           (S.OUTPUT, S.CLIP), (S.FILTER, S.FILTER), (S.CLIP, S.TAG)]


@pytest.mark.parametrize("src,dst", ALLOWED, ids=repr)
def test_allowed(src, dst):
    assert can_transition(src, dst)


@pytest.mark.parametrize("src,dst", REFUSED, ids=repr)
def test_refused(src, dst):
    assert not can_transition(src, dst)


def test_stage_facts():
    assert len(INTRA_ORDER) == 11 and len(VeStage) == 14
    assert MAX_OPS == {S.LOGIC: 5, S.FXP: 4, S.FP: 5, S.CLIP: 3}
    assert S.FXP_TO_FP not in STASHABLE and S.FP_DIV in STASHABLE
    assert [stage_way(s) for s in (S.FXP, S.NARROW, S.FP, S.FP_DIV, S.WIDEN, S.CLIP)] == [
        Way.WAY8, Way.WAY4, Way.WAY4, Way.WAY4, Way.WAY8, Way.WAY8]


def test_alu_budget():
    budget = AluBudget()
    budget.claim(FxpBinaryOp.ADD_FXP.alu)
    budget.claim(FxpBinaryOp.MUL_INT.alu)
    budget.claim(FpBinaryOp.MUL_F(FpMulAlu.MUL0).alu)
    budget.claim(FpBinaryOp.MUL_F(FpMulAlu.MUL1).alu)
    with pytest.raises(VectorRuleError) as info:
        budget.claim(FxpBinaryOp.SUB_FXP.alu)
    assert info.value.code == "VE-ALU-1" and "FxpAdd" in str(info.value)
