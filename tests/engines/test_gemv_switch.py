"""examples/gemv_switch.py: the vector, spread one flit per slice, is broadcast to every
slice by the switch (BROADCAST1) and contracted with each slice's matrix row. Checked
against the numpy oracle of the GEMV (hardware-order f32 sums, bf16 result) exactly,
against float64 within the documented tolerance, and cpu == visa bit for bit."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np

import npu_opt
from npu_opt.testing.oracles import float_tolerance_ok, gemv_oracle_exact
from tests.differential.harness import load_kernel

EXAMPLE = Path(__file__).parents[2] / "examples" / "gemv_switch.py"


def test_gemv_with_switched_vector_matches_the_oracle() -> None:
    kernel = load_kernel(EXAMPLE.read_text(encoding="utf-8"))
    rng = np.random.default_rng(2026)
    mat = rng.uniform(-1, 1, (256, 4096)).astype(ml_dtypes.bfloat16)
    vec = rng.uniform(-1, 1, 4096).astype(ml_dtypes.bfloat16)
    cpu = np.asarray(npu_opt.run(kernel, mat, vec)).view(np.uint16)
    want = gemv_oracle_exact(mat.view(np.uint16), vec.view(np.uint16))
    np.testing.assert_array_equal(cpu, want)
    assert float_tolerance_ok(cpu, mat.astype(np.float64), vec.astype(np.float64)[None, :], 4096)
    visa = np.asarray(npu_opt.run(kernel, mat, vec, backend="visa")).view(np.uint16)
    np.testing.assert_array_equal(visa, cpu)


def test_the_vector_is_stored_once_and_switched() -> None:
    text = npu_opt.compile(load_kernel(EXAMPLE.read_text(encoding="utf-8"))).text
    assert 'dm[bf16, "1", "1 # 2", "J / 16", "J % 16"]' in text      # 32 bytes per slice, not 8 KiB
    assert "switch={config=BROADCAST1, slice1=256, slice0=1, time0=0, ring_size=256" in text
