"""examples/gemm_i8_requant.py against a numpy oracle (exact integers), on cpu and visa."""

from __future__ import annotations

import numpy as np

import npu_opt
from visa.interp import execute
from visa.parser import parse_visa

from tests.backends.examples import example


def _oracle(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """min(max(round_half_up(A @ W.T / 64), 0), 127) in exact integer arithmetic."""
    c = a.astype(np.int64) @ w.astype(np.int64).T
    return np.clip((c + 32) // 64, 0, 127).astype(np.int8)


def test_gemm_i8_requant_on_cpu_and_visa():
    rng = np.random.default_rng(31)
    a = rng.integers(-128, 128, (512, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 64), dtype=np.int8)
    a[0, :] = 127                      # a row whose sums reach the clip at 127
    w[:8, :] = 127
    kernel = example("gemm_i8_requant", "gemm_i8_requant_kernel")
    want = _oracle(a, w)
    assert (want == 127).any() and (want == 0).any() and ((want > 0) & (want < 127)).any()
    cpu = npu_opt.run(kernel, a, w)
    np.testing.assert_array_equal(cpu, want)
    visa = execute(parse_visa(npu_opt.compile(kernel).text), [a, w])
    np.testing.assert_array_equal(visa, want)


def test_gemm_bf16_relu6_on_cpu_and_visa():
    """The f32 GEMM (the existing examples' exact oracle), then ReLU6 in numpy float32."""
    from tests.backends import oracles as o
    from tests.backends.examples import bf16_uniform

    rng = np.random.default_rng(32)
    a, w = bf16_uniform(rng, (512, 128)), bf16_uniform(rng, (512, 128))
    gemm = o.gemm_bf16_oracle_exact(a, w).astype(np.float32)
    want = np.minimum(np.where(gemm > 0, gemm, np.float32(0.0)), np.float32(6.0))
    kernel = example("gemm_bf16_relu", "gemm_bf16_relu_kernel")
    cpu = npu_opt.run(kernel, a, w)
    np.testing.assert_array_equal(cpu.view(np.uint32), want.view(np.uint32))
    assert (want == 0).any() and (want == 6).any()
    visa = execute(parse_visa(npu_opt.compile(kernel).text), [a, w])
    np.testing.assert_array_equal(visa.view(np.uint32), want.view(np.uint32))
