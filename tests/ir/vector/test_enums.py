"""The Vector Engine enums: names by the surface's enum rule, data variants, refusals."""

from __future__ import annotations

import numpy as np
import pytest

import ir.vector as V
from ir.mapping.axes import Axis
from ir.vector import (
    ClipBinaryOpI32, Cmp, FpBinaryOp, FpMulAlu, FpUnaryOp, FxpBinaryOp,
    RngdAlu, TagMode, VectorRuleError, VeOrder, Way, expect,
)
from ir.vector.errors import RULES, VectorRuleError as ErrorClass

# The reference's variant names, enum by enum (furiosa-opt v0.6.0 engine/vector/**).
REFERENCE = {
    "RngdAlu": "LogicAnd LogicOr LogicXor LogicLshift LogicRshift FxpAdd FxpLshift FxpMul FxpRshift "
               "FpFma FpFpu FpExp FpMul0 FpMul1 ClipAdd ClipMax ClipMin ReduceAccTree ReduceFpDiv",
    "FpMulAlu": "Mul0 Mul1 Fma",
    "LogicBinaryOpI32": "BitAnd BitOr BitXor LeftShift LogicRightShift ArithRightShift",
    "LogicBinaryOpF32": "BitAnd BitOr BitXor",
    "FxpBinaryOp": "AddFxp AddFxpSat SubFxp SubFxpSat LeftShift LeftShiftSat MulFxp MulInt "
                   "LogicRightShift ArithRightShift ArithRightShiftRound",
    "FpUnaryOp": "Exp NegExp Sqrt Tanh Sigmoid Erf Log Sin Cos",
    "FpBinaryOp": "AddF SubF MulF DivF",
    "FpTernaryOp": "FmaF",
    "FpDivBinaryOp": "DivF",
    "IntraSliceReduceOpI32": "AddSat Max Min",
    "IntraSliceReduceOpF32": "Add Max Min",
    "InterSliceReduceOpI32": "Add AddSat Max Min",
    "InterSliceReduceOpF32": "Add Max Min Mul",
    "ClipBinaryOpI32": "Min Max AbsMin AbsMax AddFxp AddFxpSat",
    "ClipBinaryOpF32": "Min Max AbsMin AbsMax Add",
    "BinaryArgMode": "Mode00 Mode01 Mode10 Mode11",
    "TernaryArgMode": "Mode012 Mode002 Mode102 Mode112 Mode020 Mode021 Mode120",
    "VeOrder": "IntraFirst InterFirst",
    "Way": "Way8 Way4",
    "BitReq": "One Zero Ignore",
    "GroupId": "Zero One",
    "Cmp": "Equal Less Greater LessUnsigned GreaterUnsigned True False",
    "TagMode": "Zero AxisToggle Comparison",
}


def upper_snake(name: str) -> str:
    out = ""
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out += "_"
        out += ch.upper()
    return out


@pytest.mark.parametrize("enum_name", sorted(REFERENCE))
def test_variants_are_the_references_in_upper_snake_case(enum_name):
    enum = getattr(V, enum_name)
    rust = REFERENCE[enum_name].split()
    assert [m.rust_name for m in enum] == rust
    assert [m.name for m in enum] == [upper_snake(r) for r in rust]
    assert [getattr(enum, upper_snake(r)) for r in rust] == list(enum)


def test_issue_spellings():
    assert FxpBinaryOp.ADD_FXP.rust_name == "AddFxp"
    assert TagMode.ZERO.rust_name == "Zero"
    assert ClipBinaryOpI32.MAX.alu is not None
    op = FpBinaryOp.MUL_F(FpMulAlu.MUL0)
    assert isinstance(op, FpBinaryOp) and op.mul_alu == FpMulAlu.MUL0 and repr(op) == "FpBinaryOp.MUL_F(FpMulAlu.MUL0)"


def test_values_compare_by_variant_and_data():
    assert FpBinaryOp.MUL_F(FpMulAlu.MUL0) == FpBinaryOp.MUL_F(FpMulAlu.MUL0)
    assert FpBinaryOp.MUL_F(FpMulAlu.MUL0) != FpBinaryOp.MUL_F(FpMulAlu.MUL1)
    assert FpBinaryOp.ADD_F != FpBinaryOp.SUB_F
    assert V.LogicBinaryOpI32.BIT_AND != V.LogicBinaryOpF32.BIT_AND  # same name, other enum
    assert len({FpBinaryOp.MUL_F(FpMulAlu.FMA), FpBinaryOp.MUL_F(FpMulAlu.FMA), FpBinaryOp.DIV_F}) == 2
    assert FpBinaryOp.MUL_F(FpMulAlu.MUL1).is_(FpBinaryOp.MUL_F)
    assert not FpBinaryOp.ADD_F.is_(FpBinaryOp.MUL_F)
    with pytest.raises(AttributeError):
        FpBinaryOp.ADD_F.name = "X"


def test_values_survive_copy_and_pickle():
    import copy
    import pickle
    values = [FpBinaryOp.ADD_F, FpBinaryOp.MUL_F(FpMulAlu.MUL1), TagMode.AXIS_TOGGLE(axis="A"),
              TagMode.COMPARISON([Cmp.LESS(2.5), Cmp.TRUE, Cmp.FALSE, Cmp.EQUAL(0.0)])]
    for v in values:
        assert copy.copy(v) is v and copy.deepcopy(v) is v
        back = pickle.loads(pickle.dumps(v))
        assert back == v and repr(back) == repr(v)
    assert pickle.loads(pickle.dumps(FpBinaryOp.ADD_F)) is FpBinaryOp.ADD_F


def test_alus_follow_the_reference_table():
    assert FpBinaryOp.MUL_F(FpMulAlu.MUL1).alu == RngdAlu.FP_MUL1
    assert FpBinaryOp.MUL_F(FpMulAlu.FMA).alu == RngdAlu.FP_FMA
    assert FpBinaryOp.DIV_F.alu == RngdAlu.FP_FPU
    assert V.FpDivBinaryOp.DIV_F.alu == RngdAlu.REDUCE_FP_DIV
    assert FpUnaryOp.NEG_EXP.alu == RngdAlu.FP_EXP and FpUnaryOp.ERF.alu == RngdAlu.FP_FPU
    assert {op.alu for op in FxpBinaryOp} == {RngdAlu.FXP_ADD, RngdAlu.FXP_LSHIFT, RngdAlu.FXP_MUL, RngdAlu.FXP_RSHIFT}
    assert ClipBinaryOpI32.ABS_MAX.alu == RngdAlu.CLIP_MAX and ClipBinaryOpI32.ADD_FXP_SAT.alu == RngdAlu.CLIP_ADD
    assert V.LogicBinaryOpI32.ARITH_RIGHT_SHIFT.alu == RngdAlu.LOGIC_RSHIFT
    assert [op.name for op in FxpBinaryOp if op.is_shift] == [
        "LEFT_SHIFT", "LEFT_SHIFT_SAT", "LOGIC_RIGHT_SHIFT", "ARITH_RIGHT_SHIFT", "ARITH_RIGHT_SHIFT_ROUND"]


def test_order_and_way():
    assert [o.name for o in VeOrder] == ["INTRA_FIRST", "INTER_FIRST"]
    assert [w.name for w in Way] == ["WAY8", "WAY4"]


def test_struct_and_list_variants():
    assert TagMode.AXIS_TOGGLE(axis=Axis("A", 4)) == TagMode.AXIS_TOGGLE(axis="A")
    cmps = [Cmp.EQUAL(0.0), Cmp.GREATER(0.0), Cmp.LESS(0.0), Cmp.TRUE]
    mode = TagMode.COMPARISON(cmps)
    assert mode.cmps == tuple(cmps)
    assert repr(mode) == "TagMode.COMPARISON([Cmp.EQUAL(0.0), Cmp.GREATER(0.0), Cmp.LESS(0.0), Cmp.TRUE])"
    assert Cmp.LESS(3).scalar == "i32" and Cmp.LESS(3.0).scalar == "f32" and Cmp.TRUE.scalar is None
    assert isinstance(Cmp.EQUAL(0.1).boundary, np.float32)


def raises(code: str, fn, *args, **kwargs) -> VectorRuleError:
    with pytest.raises(VectorRuleError) as info:
        fn(*args, **kwargs)
    assert info.value.code == code
    assert code in RULES
    return info.value


def test_data_variant_used_without_data_is_ve_enum_1_at_the_users_line():
    err = raises("VE-ENUM-1", expect, FpBinaryOp, FpBinaryOp.MUL_F)
    assert "FpBinaryOp.MUL_F(<an FpMulAlu>)" in err.help
    assert err.location.file == __file__
    v = err.violation()
    assert v.code == "VE-ENUM-1" and v.help == err.help


def test_wrong_arity_or_keywords_is_ve_enum_2():
    raises("VE-ENUM-2", FpBinaryOp.MUL_F)
    raises("VE-ENUM-2", FpBinaryOp.MUL_F, FpMulAlu.MUL0, FpMulAlu.MUL1)
    raises("VE-ENUM-2", FpBinaryOp.MUL_F, mul_alu=FpMulAlu.MUL0)  # tuple variant: positional
    raises("VE-ENUM-2", TagMode.AXIS_TOGGLE, "A")  # struct variant: keyword
    raises("VE-ENUM-2", TagMode.AXIS_TOGGLE, axes="A")


def test_line_of_a_bad_constructor_call_is_the_callers():
    with pytest.raises(VectorRuleError) as info:
        FpBinaryOp.MUL_F(FpMulAlu)  # the class, not a value
    assert info.value.code == "VE-ENUM-3"
    assert info.value.location.file == __file__
    assert info.value.location.line == test_line_of_a_bad_constructor_call_is_the_callers.__code__.co_firstlineno + 2


def test_wrong_field_kind_is_ve_enum_3():
    raises("VE-ENUM-3", FpBinaryOp.MUL_F, 0)
    raises("VE-ENUM-3", FpBinaryOp.MUL_F, RngdAlu.FP_MUL0)
    raises("VE-ENUM-3", TagMode.COMPARISON, [Cmp.TRUE] * 3)
    raises("VE-ENUM-3", TagMode.COMPARISON, [Cmp.LESS(1), Cmp.LESS(1.0), Cmp.TRUE, Cmp.TRUE])
    raises("VE-ENUM-3", TagMode.COMPARISON, [Cmp.TRUE, Cmp.TRUE, Cmp.TRUE, "x"])
    # the message says what is wrong once, not "takes a list of four Cmp: expected a list of four Cmp"
    assert str(raises("VE-ENUM-3", TagMode.COMPARISON, [Cmp.TRUE] * 3)).count("four Cmp") == 1
    assert "Cmp.EQUAL needs its boundary, e.g. Cmp.EQUAL(0)" in str(raises("VE-ENUM-3", TagMode.COMPARISON,
                                                                           [Cmp.EQUAL, Cmp.TRUE, Cmp.TRUE, Cmp.TRUE]))
    raises("VE-ENUM-3", TagMode.AXIS_TOGGLE, axis="_lower")  # lowercase names are axes since v0.9
    raises("VE-ENUM-3", Cmp.EQUAL, True)
    raises("VE-ENUM-3", Cmp.EQUAL, "1")


def test_out_of_range_boundary_is_a_constant_rule():
    raises("VE-CONST-1", Cmp.LESS, 2**31)
    raises("VE-CONST-2", Cmp.LESS, 1e39)


def test_wrong_enum_is_ve_enum_4():
    raises("VE-ENUM-4", expect, FpBinaryOp, FxpBinaryOp.ADD_FXP)
    raises("VE-ENUM-4", expect, FpBinaryOp, "AddF")
    raises("VE-ENUM-4", expect, (ClipBinaryOpI32, V.ClipBinaryOpF32), FxpBinaryOp.ADD_FXP)
    raises("VE-ENUM-4", expect, TagMode, FpBinaryOp.MUL_F)  # another enum's constructor
    assert expect((ClipBinaryOpI32, V.ClipBinaryOpF32), V.ClipBinaryOpF32.ADD) == V.ClipBinaryOpF32.ADD


def test_calling_a_value_is_ve_enum_5():
    err = raises("VE-ENUM-5", TagMode.ZERO)
    assert "without parentheses" in err.help
    raises("VE-ENUM-5", FpBinaryOp.MUL_F(FpMulAlu.MUL0), FpMulAlu.MUL0)
    from npu_opt import Stash  # the reference's unit struct: `Stash()` is the same slip

    assert "write `Stash` without parentheses" == raises("VE-ENUM-5", Stash).help


def test_error_is_a_typecheck_error_and_rules_have_docs():
    assert issubclass(ErrorClass, V.VectorRuleError)
    from ir.errors import TypeCheckError
    assert issubclass(VectorRuleError, TypeCheckError)
    assert {"VE-ENUM-1", "VE-ENUM-5", "VE-CONST-3", "VE-SLOT-5", "VE-ALU-1"} <= RULES
    with pytest.raises(ValueError):
        VectorRuleError("VE-NOPE-1", "x")
