"""examples/dense_bf16.py against a numpy oracle: the exact f32 GEMM, plus the bias and
ReLU in numpy float32 (one rounding each, as the Clip cluster does), on cpu and visa."""

from __future__ import annotations

import numpy as np

import npu_opt
from visa.interp import execute
from visa.parser import parse_visa

from tests.backends import oracles as o
from tests.backends.examples import bf16_uniform, example


def test_dense_bf16_on_cpu_and_visa():
    rng = np.random.default_rng(41)
    a, w = bf16_uniform(rng, (512, 128)), bf16_uniform(rng, (512, 128))
    b = rng.standard_normal(512).astype(np.float32)
    gemm = o.gemm_bf16_oracle_exact(a, w).astype(np.float32)
    biased = (gemm + b[None, :]).astype(np.float32)
    want = np.where(biased > 0, biased, np.float32(0.0))
    assert (want == 0).any() and (want > 0).any()
    kernel = example("dense_bf16", "dense_bf16_kernel")
    cpu = npu_opt.run(kernel, a, w, b)
    np.testing.assert_array_equal(cpu.view(np.uint32), want.view(np.uint32))
    visa = execute(parse_visa(npu_opt.compile(kernel).text), [a, w, b])
    np.testing.assert_array_equal(visa.view(np.uint32), want.view(np.uint32))
