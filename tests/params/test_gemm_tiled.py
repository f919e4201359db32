"""examples/gemm_tiled.py: a GEMM bigger than one pass, written tile by tile into the caller's
`Mut[...]` output, against a float64 numpy oracle; visa equals cpu bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import npu_opt
from tests.kernel_files import example


def test_tiles_land_in_the_callers_array_on_both_backends():
    kernel = example("gemm_tiled")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((1024, 128)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((1024, 128)).astype(ml_dtypes.bfloat16)
    want = a.astype(np.float64) @ w.astype(np.float64).T
    out_cpu = np.full((1024, 1024), np.nan, np.float32)   # every cell must be written
    result = npu_opt.run(kernel, a, w, out_cpu)
    assert result is out_cpu
    np.testing.assert_allclose(out_cpu, want, rtol=1e-5, atol=1e-4)
    out_visa = np.full((1024, 1024), np.nan, np.float32)
    npu_opt.run(kernel, a, w, out_visa, backend="visa")
    assert np.array_equal(out_visa.view(np.uint32), out_cpu.view(np.uint32))
