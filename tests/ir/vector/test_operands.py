"""Operand kinds, tag guards, guarded layouts and comparison tags."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ir.vector import BitReq, Cmp, GroupId, VectorRuleError
from ir.vector.branch import BranchedOperand, TagGuard, comparison_ids
from ir.vector.branching import admits, guard_code
from ir.vector.operands import Constant, Stash, StashOperand, TernaryOperand, VrfOperand

I, ONE, ZERO = BitReq.IGNORE, BitReq.ONE, BitReq.ZERO


def code_of(fn, *args) -> str:
    with pytest.raises(VectorRuleError) as info:
        fn(*args)
    return info.value.code


def test_constants():
    c = Constant.of(7, "i32")
    assert c == Constant(7, "i32") and str(c) == "7"
    f = Constant.of(0.1, "f32")
    assert f.value == np.float32(0.1)
    assert code_of(Constant.of, 2**40, "i32") == "VE-CONST-1"
    assert code_of(Constant.of, 1.5, "i32") == "VE-CONST-3"
    with pytest.raises(ValueError):
        Constant(1, "i16")


def test_stash_vrf_and_ternary_operands():
    assert Stash == StashOperand() and str(Stash) == "Stash"
    v = VrfOperand(tensor="vrf0", scalar="f32")
    t = TernaryOperand.of(v, 2)
    assert t.rhs is v and t.operand1 == Constant(np.float32(2.0), "f32")
    assert TernaryOperand.of(1.5, 0.0).rhs == Constant(np.float32(1.5), "f32")
    assert code_of(TernaryOperand.of, Stash, 1e40) == "VE-CONST-2"


def test_comparison_ids_set_one_bit_per_comparison():
    x = np.float32([0.0, 1.5, -2.5, -0.0, math.nan])
    ids = comparison_ids(x, (Cmp.EQUAL(0.0), Cmp.GREATER(0.0), Cmp.LESS(0.0), Cmp.TRUE))
    assert ids.tolist() == [0b1001, 0b1010, 0b1100, 0b1001, 0b1000]
    # unsigned forms compare the bit patterns: -1.0 is above 1.0, and for i32 -1 is above 1
    assert comparison_ids(np.float32([-1.0]), (Cmp.GREATER_UNSIGNED(1.0),) + (Cmp.FALSE,) * 3).tolist() == [1]
    i = np.int32([-1, 0, 5])
    assert comparison_ids(i, (Cmp.LESS(0), Cmp.LESS_UNSIGNED(0), Cmp.GREATER_UNSIGNED(1), Cmp.EQUAL(5))).tolist() == [
        0b0101, 0b0000, 0b1100]


def test_guards():
    ids = np.arange(16)

    def admitted(guard):  # the ids a guard admits, by its (mask, want, neg) code as the backends run it
        return admits(*guard_code(guard), ids)

    assert admitted(TagGuard.all()).all()
    assert admitted(TagGuard.group(GroupId.ONE)).tolist() == [i >= 8 for i in range(16)]
    assert TagGuard.not_matches([I, I, I, ONE]) == TagGuard.group(GroupId.ZERO)  # folded
    m = TagGuard.matches([ONE, ZERO, I, I])
    assert admitted(m).tolist() == [(i & 1) == 1 and (i & 2) == 0 for i in range(16)]
    assert admitted(TagGuard.not_matches([ONE, ZERO, I, I])).tolist() == (~admitted(m)).tolist()
    assert TagGuard.not_matches([I, I, I, I]).admits_nothing
    assert code_of(TagGuard.matches, [ONE, ZERO]) == "VE-ENUM-3"


def test_slot_rules():
    c = Constant.of(1, "i32")
    g = TagGuard.group(GroupId.ZERO)
    assert code_of(BranchedOperand.start().imm, TagGuard.not_matches([I] * 4), c) == "VE-SLOT-2"
    at_rf = BranchedOperand.start().rf(g, Stash)
    assert code_of(at_rf.imm, g, c) == "VE-SLOT-3"
    assert code_of(at_rf.rf, g, Stash) == "VE-SLOT-3"
    three = BranchedOperand.start().imm(g, c).imm(g, c).imm(g, c)
    assert code_of(three.imm, g, c) == "VE-SLOT-4"
    assert code_of(BranchedOperand.start().imm(TagGuard.all(), c).imm, g, c) == "VE-SLOT-5"
    assert len(three.rf(TagGuard.all(), Stash).slots()) == 4  # legal: three guarded immediates, then an else
