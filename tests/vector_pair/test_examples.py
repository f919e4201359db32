"""examples/residual_add.py and examples/leaky_relu.py against numpy float32, on cpu and visa."""

from __future__ import annotations

import numpy as np

import npu_opt
from tu_ops import rngd
from visa.interp import execute
from visa.parser import parse_visa
from visa.verify import verify_text

from tests.backends.examples import example


def test_residual_add_on_cpu_and_visa():
    rng = np.random.default_rng(41)
    x = (rng.standard_normal((2048, 64)) * 4).astype(np.float32)
    y = (rng.standard_normal((2048, 64)) * 4).astype(np.float32)
    x[0, :3], y[0, :3] = [1e-45, np.inf, 3e38], [-1e-45, -np.inf, 3e38]   # signed zero, NaN, overflow
    with np.errstate(over="ignore", invalid="ignore"):
        want = x + y  # numpy float32: IEEE round to nearest even
    want[np.isnan(want)] = np.uint32(0x7FC00000).view(np.float32)  # the one NaN (docs/numerics.md), not the host's
    kernel = example("residual_add", "residual_add_kernel")
    cpu = npu_opt.run(kernel, x, y)
    np.testing.assert_array_equal(cpu.view(np.uint32), want.view(np.uint32))
    text = npu_opt.compile(kernel).text
    verify_text(text, rngd())
    assert 'interleave=(' in text and " = vector_pair " in text
    visa = execute(parse_visa(text), [x, y])
    np.testing.assert_array_equal(visa.view(np.uint32), want.view(np.uint32))


def test_leaky_relu_on_cpu_and_visa():
    rng = np.random.default_rng(42)
    x = (rng.standard_normal((2048, 64)) * 3).astype(np.float32)
    x[0, :5] = [-0.0, 0.0, np.nan, -np.inf, -1e-45]
    with np.errstate(invalid="ignore"):
        want = np.where(x < 0, x * np.float32(0.01), x).astype(np.float32)  # NaN and -0.0 are not below 0
    kernel = example("leaky_relu", "leaky_relu_kernel")
    cpu = npu_opt.run(kernel, x)
    np.testing.assert_array_equal(cpu.view(np.uint32), want.view(np.uint32))
    text = npu_opt.compile(kernel).text
    verify_text(text, rngd())
    assert "tag=[{cmp=LESS, bound=0}" in text and "slots=[{mask=1, want=1, neg=0, value=" in text
    visa = execute(parse_visa(text), [x])
    np.testing.assert_array_equal(visa.view(np.uint32), want.view(np.uint32))
