"""Rolled loops run (docs/loops.md): cpu == visa == a numpy oracle, and a rolled loop gives what
the same kernel with a Python `for` (unrolled) gives; the loop's records print, parse back
and verify."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.loops import kernels as K
from visa import parse_visa
from visa.printer import print_artifact
from visa.verify import verify_text

RNG = np.random.default_rng(7)
PAGES = RNG.integers(-128, 127, (8, 64, 32), dtype=np.int8)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_rolled_copy_equals_the_unrolled_one_and_the_oracle(backend):
    assert np.array_equal(npu_opt.run(K.copy_rolled, PAGES, backend=backend), PAGES)
    assert np.array_equal(npu_opt.run(K.copy_unrolled, PAGES, backend=backend), PAGES)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_an_affine_start_and_a_buffer_read_by_every_iteration(backend):
    want = np.zeros_like(PAGES)
    want[:4] = PAGES[1::2]
    assert np.array_equal(npu_opt.run(K.copy_shifted, PAGES, backend=backend), want)
    assert np.array_equal(npu_opt.run(K.copy_through_dm, PAGES, backend=backend), PAGES)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("n", [0, 3, 8])
def test_a_guarded_body_and_a_runtime_bound(backend, n):
    want = np.zeros_like(PAGES)
    want[:n] = PAGES[:n]
    assert np.array_equal(npu_opt.run(K.copy_first, PAGES, n, backend=backend), want)
    assert np.array_equal(npu_opt.run(K.copy_bounded, PAGES, n, backend=backend), want)
    want[2] = 0
    assert np.array_equal(npu_opt.run(K.copy_bounded_skip_2, PAGES, n, backend=backend), want)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("n", [0, 5, 8])
def test_nested_loops_with_a_guard_on_both_indices(backend, n):
    want = np.zeros_like(PAGES)
    for p in range(n):
        i, j = divmod(p, 4)
        want[4 * i + 3 - j] = PAGES[p]
    assert np.array_equal(npu_opt.run(K.copy_nested, PAGES, n, backend=backend), want)


def test_a_runtime_bound_past_the_pages_stops_the_run():
    with pytest.raises(npu_opt.NpuOptError) as e:
        npu_opt.run(K.copy_bounded, PAGES, 9, backend="visa")
    assert e.value.code == "RUNTIME-10"


def _gemm(kernel, a, w, acc, backend):
    out = np.zeros((a.shape[0], w.shape[0]), acc)
    npu_opt.run(kernel, a, w, out, backend=backend)
    return out


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_rolled_i8_gemm_is_exact(backend):
    a = RNG.integers(-128, 127, (512 * K.T, 128), dtype=np.int8)
    w = RNG.integers(-128, 127, (512, 128), dtype=np.int8)
    want = (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)
    assert np.array_equal(_gemm(K.gemm_i8_rolled, a, w, np.int32, backend), want)
    assert np.array_equal(_gemm(K.gemm_i8_unrolled, a, w, np.int32, backend), want)


def test_a_rolled_bf16_gemm_equals_the_unrolled_one_on_both_backends():
    a = RNG.standard_normal((512 * K.T, 128)).astype(ml_dtypes.bfloat16)
    w = RNG.standard_normal((512, 128)).astype(ml_dtypes.bfloat16)
    got = [_gemm(k, a, w, np.float32, b) for k in (K.gemm_bf16_rolled, K.gemm_bf16_unrolled) for b in ("cpu", "visa")]
    assert all(np.array_equal(got[0], g) for g in got[1:])
    oracle = a.astype(np.float32) @ w.astype(np.float32).T
    np.testing.assert_allclose(got[0], oracle, rtol=1e-2, atol=1e-2)


def test_the_loop_records_print_parse_back_and_verify():
    text = npu_opt.compile(K.gemm_i8_rolled).text
    begins = [line for line in text.splitlines() if "= loop_begin " in line]
    ends = [line for line in text.splitlines() if "= loop_end " in line]
    assert len(begins) == len(ends) == 1
    assert f"start=0 stop={K.T} : scalar[usize] -> scalar[usize]" in begins[0]
    assert text.count("contract_outer") == 1          # the body once, not once per tile
    assert print_artifact(parse_visa(text)) == text
    verify_text(text)
    bounded = npu_opt.compile(K.copy_bounded).text
    assert any("= loop_begin bound=%" in line for line in bounded.splitlines())
    verify_text(bounded)
