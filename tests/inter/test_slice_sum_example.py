"""examples/slice_sum.py against numpy: the i32 sum exact (wrapping), the f32 sum folded in
slice order with a rounding at every add; cpu == visa bit for bit."""

from __future__ import annotations

import numpy as np

import npu_opt
from visa.interp import execute
from visa.parser import parse_visa

from tests.backends.examples import example


def _both(kernel, x):
    cpu = npu_opt.run(kernel, x)
    visa = execute(parse_visa(npu_opt.compile(kernel).text), [x])
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))
    return cpu


def test_i32_sum_over_256_slices_wraps():
    x = np.random.default_rng(256).integers(-2**31, 2**31, (256, 64), dtype=np.int64).astype(np.int32)
    y = _both(example("slice_sum", "slice_sum_i32"), x)
    want = (x.astype(np.int64).sum(axis=0) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(y, want.astype(np.int32))


def test_f32_sum_over_256_slices_in_slice_order():
    x = np.random.default_rng(257).standard_normal((256, 64)).astype(np.float32)
    y = _both(example("slice_sum", "slice_sum_f32"), x)
    acc = np.zeros(64, np.float32)
    for row in x:  # f64 add of two f32 values, rounded once: the f32 add
        acc = (acc.astype(np.float64) + row).astype(np.float32)
    np.testing.assert_array_equal(y.view(np.uint32), acc.view(np.uint32))
    np.testing.assert_allclose(y, x.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-4)
