"""examples/loops/gemm_rolled.py: an i8 GEMM whose row tiles are a rolled loop runs exactly
(cpu == visa == numpy), and its artifact holds the body once."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

import npu_opt

EXAMPLE = runpy.run_path(str(Path(__file__).parents[2] / "examples" / "loops" / "gemm_rolled.py"))
GEMM = EXAMPLE["gemm_rolled"]


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_the_rolled_gemm_is_exact(backend):
    rng = np.random.default_rng(11)
    mt, nt = EXAMPLE["MT"], EXAMPLE["NT"]
    a = rng.integers(-128, 128, (512 * mt, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512 * nt, 128), dtype=np.int8)
    out = np.zeros((512 * mt, 512 * nt), np.int32)
    npu_opt.run(GEMM, a, w, out, backend=backend)
    assert np.array_equal(out, (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32))


def test_the_body_is_compiled_once():
    text = npu_opt.compile(GEMM).text
    assert text.count("= loop_begin ") == 1
    assert text.count("contract_outer") == EXAMPLE["NT"]     # the unrolled inner loop: once per weight block
