"""One NaN (issue 28 item 6): every NaN the Vector Engine's arithmetic makes is 0x7FC00000,
the contraction engine's NaN, on the cpu backend and in the VISA interpreter alike, whatever
the host FPU's default NaN (0xFFC00000 on x86) and whatever the operands' NaN payloads."""

from __future__ import annotations

import numpy as np
import pytest

from npu_opt import FpBinaryOp, FpMulAlu, FpUnaryOp
from tests.agree import both_backends
from tests.vector.kernels import float_kernel

SPECIAL = np.array([0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x3F800000, 0xBF800000,
                    0x7FC01234, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x40490FDB, 0xC0000000], np.uint32)
X = np.resize(SPECIAL, (8, 64)).view(np.float32)

CHAINS = {
    "inf_minus_inf": [("vector_fp_binary", FpBinaryOp.ADD_F, float("-inf"))],
    "zero_times_inf": [("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL0), 0.0),
                       ("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL1), float("inf"))],
    "sqrt_of_negative": [("vector_fp_unary", FpUnaryOp.SQRT)],
    "log_of_negative": [("vector_fp_unary", FpUnaryOp.LOG)],
    "zero_over_zero": [("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL0), 0.0), ("vector_fp_div", 0.0)],
    "sub_then_mul": [("vector_fp_binary", FpBinaryOp.SUB_F, 1.0), ("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL0), 2.0)],
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_every_nan_is_the_canonical_one(name):
    cpu, _ = both_backends(float_kernel(CHAINS[name], name=name), X)
    bits = cpu.view(np.uint32)
    nan = np.isnan(cpu)
    assert nan.any(), "the chain made no NaN"
    assert set(bits[nan].tolist()) == {0x7FC00000}


def test_finite_results_are_untouched():
    cpu, _ = both_backends(float_kernel(CHAINS["sub_then_mul"], name="finite"), X)
    with np.errstate(invalid="ignore"):
        want = (X - np.float32(1.0)) * np.float32(2.0)
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(cpu.view(np.uint32)[keep], want.view(np.uint32)[keep])
