"""The 4-way float path: `vector_narrow_trim`, `vector_fp_binary` / `vector_fp_unary` with
constants, `vector_widen_pad`; cpu against numpy (exact for the IEEE ops, within the
documented ulps for the transcendentals), cpu == visa bit for bit, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.vector.numerics import ULP_TOLERANCE
from npu_opt import ClipBinaryOpF32, FpBinaryOp, FpMulAlu, FpUnaryOp, m
from visa.interp import execute
from visa.parser import parse_visa

from tests.vector.kernels import float_kernel

RNG = np.random.default_rng(8)
X = RNG.uniform(-6, 6, (8, 64)).astype(np.float32)
MUL0 = FpBinaryOp.MUL_F(FpMulAlu.MUL0)


def _ulps(got: np.ndarray, exact: np.ndarray) -> float:
    """Error of f32 `got` against float64 `exact`, in f32 ulps of the exact value."""
    spacing = np.array([np.spacing(np.float32(abs(v))) for v in exact.ravel()], np.float64).reshape(exact.shape)
    return float(np.max(np.abs(got.astype(np.float64) - exact) / spacing))


def test_ieee_ops_are_exact():
    k = float_kernel([("vector_fp_binary", MUL0, 0.1), ("vector_fp_binary", FpBinaryOp.SUB_F, 2.5),
                      ("vector_fp_binary", FpBinaryOp.DIV_F, 3.0)])
    want = ((X * np.float32(0.1)) - np.float32(2.5)) / np.float32(3.0)  # float32 numpy: IEEE, ties to even
    np.testing.assert_array_equal(npu_opt.run(k, X).view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("name", ["EXP", "TANH", "SIGMOID"])
def test_transcendental_within_documented_ulps(name):
    k = float_kernel([("vector_fp_unary", getattr(FpUnaryOp, name))])
    x64 = X.astype(np.float64)
    exact = {"EXP": np.exp(x64), "TANH": np.tanh(x64), "SIGMOID": 1.0 / (1.0 + np.exp(-x64))}[name]
    assert _ulps(npu_opt.run(k, X), exact) <= ULP_TOLERANCE[name].ulps


CHAINS = {
    "affine_exp": [("vector_fp_binary", MUL0, 0.5), ("vector_fp_unary", FpUnaryOp.EXP),
                   ("vector_fp_binary", FpBinaryOp.ADD_F, 1.0)],
    "sigmoid_scale": [("vector_fp_unary", FpUnaryOp.SIGMOID), ("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.FMA), 3.0)],
    "sqrt_of_square": [("vector_fp_binary", MUL0, -1.5), ("vector_fp_binary", FpBinaryOp.MUL_F(FpMulAlu.MUL1), -2.0),
                       ("vector_fp_unary", FpUnaryOp.SQRT)],
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_visa_agrees_with_cpu(name):
    k = float_kernel(CHAINS[name], name=name)
    cpu = npu_opt.run(k, X)
    visa = execute(parse_visa(npu_opt.compile(k).text), [X])
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))


def _first(kernel):
    report = npu_opt.check(kernel)
    assert report.diagnostics, "the kernel was accepted"
    return report.diagnostics[0]


@pytest.mark.parametrize("steps, code", [
    ([("vector_clip", ClipBinaryOpF32.MAX, 0.0)], "TYPE-1"),            # clip is 8-way
    ([("vector_final",)], "TYPE-1"),                                    # final needs 8-way
    ([("vector_fp_unary", FpUnaryOp.TANH), ("vector_fp_unary", FpUnaryOp.SQRT)], "VE-ALU-1"),  # FpFpu twice
    ([("vector_fp_binary", FpBinaryOp.MUL_F, 2.0)], "VE-ENUM-1"),       # the ALU is missing
    ([("vector_fp_binary", FpBinaryOp.ADD_F, 1e39)], "VE-CONST-2"),
])
def test_refused_float_chain(steps, code):
    d = _first(float_kernel(steps))
    assert d.code == code, d.render()


def test_trim_of_a_full_flit_is_refused():
    from tests.vector.kernels import chain_kernel
    from npu_opt import f32

    d = _first(chain_kernel(f32, [("vector_narrow_trim", m("E % 4", axes={"A": 8, "E": 64}))]))
    assert d.code == "VE-TRIM-2", d.render()
