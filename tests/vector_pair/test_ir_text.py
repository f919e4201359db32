"""The traced IR text of pair, tagged and stash passes parses back to the same ops (stages
shared by several op classes are told apart by their fields)."""

from __future__ import annotations

import pytest

from tests.kernel_text import parse_kernel
from npu_opt import (BinaryArgMode, BitReq, LogicBinaryOpI32, Branched, ClipBinaryOpI32, Cmp, FpBinaryOp, FpMulAlu, FpUnaryOp, FxpBinaryOp, Stash,
                     TagGuard, TagMode, i32)

from npu_opt import FpTernaryOp, TernaryArgMode
from tests.vector.kernels import float_kernel
from tests.vector_pair.kernels import float_pair_kernel, pair_kernel, tagged_kernel
from tests.vector_pair.test_branch_rf import NEG, POS, _guarded_rf_kernel

B0 = TagGuard.not_matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.ZERO])
KERNELS = {
    "pair": lambda: pair_kernel(i32, [("vector_fxp", FxpBinaryOp.MUL_INT, None, -3),
                                      ("vector_fxp_zip", FxpBinaryOp.ADD_FXP), ("vector_clip", ClipBinaryOpI32.MAX, 0)]),
    "float_pair": lambda: float_pair_kernel([("vector_fp_unary", FpUnaryOp.EXP, False, True),
                                             ("vector_fp_zip", FpBinaryOp.MUL_F(FpMulAlu.MUL1))]),
    "pair_fma": lambda: float_pair_kernel([("vector_fp_ternary_with_mode", FpTernaryOp.FMA_F, TernaryArgMode.MODE102,
                                            (2.0, -0.5), None), ("vector_fp_zip", FpBinaryOp.MUL_F(FpMulAlu.MUL0))]),
    "branched": lambda: tagged_kernel(i32, TagMode.COMPARISON([Cmp.LESS_UNSIGNED(7), Cmp.EQUAL(-1), Cmp.TRUE,
                                                               Cmp.FALSE]),
                                      [("vector_fxp", FxpBinaryOp.ADD_FXP, Branched.imm(B0, 5).imm(TagGuard.all(), -5))]),
    "pair_logic_modes": lambda: pair_kernel(i32, [("vector_logic_with_mode", LogicBinaryOpI32.BIT_OR, BinaryArgMode.MODE10,
                                                   1, None), ("vector_logic_zip", LogicBinaryOpI32.BIT_XOR),
                                                  ("vector_fxp_with_mode", FxpBinaryOp.SUB_FXP, BinaryArgMode.MODE10, 3)]),
    "branched_rf": lambda: _guarded_rf_kernel(lambda v: Branched.imm(NEG, 5).rf(POS, v), "branched_rf"),
    "stash": lambda: tagged_kernel(i32, TagMode.ZERO, [("vector_stash",), ("vector_fxp", FxpBinaryOp.MUL_INT, 3),
                                                       ("vector_clip", ClipBinaryOpI32.MIN, Stash)]),
    "stash_modes": lambda: tagged_kernel(i32, TagMode.ZERO, [
        ("vector_stash",), ("vector_logic_with_mode", LogicBinaryOpI32.BIT_OR, BinaryArgMode.MODE10, Stash)]),
    "stash_fma": lambda: float_kernel([("vector_stash",), ("vector_fp_ternary_with_mode", FpTernaryOp.FMA_F,
                                                           TernaryArgMode.MODE021, (Stash, 0.5))]),
    "fma_slots": lambda: float_kernel([("vector_stash",), ("vector_fp_ternary", FpTernaryOp.FMA_F, Branched.imm(
        B0, (2.0, -0.5)).rf(TagGuard.all(), (Stash, 0.25)))]),
    "stash_slot": lambda: tagged_kernel(i32, TagMode.COMPARISON([Cmp.LESS(0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE]), [
        ("vector_stash",), ("vector_fxp", FxpBinaryOp.MUL_INT, 3),
        ("vector_clip", ClipBinaryOpI32.ADD_FXP, Branched.imm(B0, 5).rf(TagGuard.all(), Stash))]),
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_ir_text_round_trip(name):
    traced = KERNELS[name]().trace().kernel
    text = traced.text()
    parsed = parse_kernel(text)
    assert parsed.text() == text
    assert [type(op) for op in parsed.ops] == [type(op) for op in traced.ops]
    engine = [(a, b) for a, b in zip(parsed.ops, traced.ops) if a.STAGE.startswith(("vector_", "begin"))]
    assert len(engine) >= 4 and all(a == b for a, b in engine)
