"""examples/runtime/moe_routing.py against a numpy oracle, on cpu and visa bit for bit: empty
experts and empty token blocks are skipped (their output stays zero even where the host
left garbage in the skipped tokens)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from driver.discover import discover

ROOT = Path(__file__).resolve().parents[2]

E, B, S, K, N = 4, 2, 64, 16, 8


def inputs(counts, seed):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(-4, 5, (E, B, S, K)).astype(np.float32)
    for e, n in enumerate(counts):
        tokens[e].reshape(B * S, K)[n:] = 0                         # the router pads after the routed tokens
        for b in range(B):
            if n <= S * b:
                tokens[e, b] = 99                                   # a skipped block: garbage must not show
    weights = rng.integers(-4, 5, (E, N, K)).astype(np.float32)
    return tokens.astype(ml_dtypes.bfloat16), weights.astype(ml_dtypes.bfloat16)


def oracle(tokens, weights, counts):
    """Small integers: every product and sum is exact in f32, so the order does not matter."""
    out = np.zeros((E, B, S, N), np.float32)
    x, w = tokens.astype(np.float64), weights.astype(np.float64)
    for e, n in enumerate(counts):
        for b in range(B):
            if n > S * b:
                out[e, b] = x[e, b] @ w[e].T
    return out


@pytest.mark.parametrize("counts", [(0, 70, 64, 128), (128, 0, 0, 1), (0, 0, 0, 0)])
def test_moe_routing_matches_the_oracle(counts):
    [kernel] = discover([str(ROOT / "examples" / "runtime" / "moe_routing.py")]).kernels
    tokens, weights = inputs(counts, sum(counts))
    cpu = npu_opt.run(kernel, tokens, weights, counts)
    visa = npu_opt.run(kernel, tokens, weights, counts, backend="visa")
    assert np.array_equal(cpu.view(np.uint32), visa.view(np.uint32))
    assert np.array_equal(cpu, oracle(tokens, weights, counts))
