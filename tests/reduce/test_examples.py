"""examples/softmax_rows.py and examples/rmsnorm.py against numpy float64 oracles (within a
few f32 ulps: the engine's exp / log are once-rounded, and the reduce adds in its own
order), and cpu == visa bit for bit."""

from __future__ import annotations

import numpy as np

import npu_opt
from visa.interp import execute
from visa.parser import parse_visa

from tests.backends.examples import example


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _rmsnorm(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-6) * g


def _both(kernel, *arrays):
    cpu = npu_opt.run(kernel, *arrays)
    visa = execute(parse_visa(npu_opt.compile(kernel).text), list(arrays))
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))
    return cpu


def test_softmax_rows_on_cpu_and_visa():
    rng = np.random.default_rng(51)
    x = (rng.standard_normal((8, 64)) * 4).astype(np.float32)
    x[3] += 80.0                                # a row that would overflow exp without the max
    y = _both(example("softmax_rows", "softmax_rows_kernel"), x)
    np.testing.assert_allclose(y, _softmax(x), rtol=4e-6, atol=1e-30)
    np.testing.assert_allclose(y.astype(np.float64).sum(axis=1), 1.0, rtol=2e-5)


def test_rmsnorm_on_cpu_and_visa():
    rng = np.random.default_rng(52)
    x = (rng.standard_normal((8, 64)) * 3).astype(np.float32)
    g = rng.standard_normal(64).astype(np.float32)
    y = _both(example("rmsnorm", "rmsnorm_kernel"), x, g)
    np.testing.assert_allclose(y, _rmsnorm(x, g), rtol=2e-6)
