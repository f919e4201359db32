"""`CpuOptions` choose how the cpu backend evaluates, never what: the BLAS pool size, the
float threads and the reference moves give the same bits; the trace is kept per kernel
and target, so a second `run` does not trace again."""

from __future__ import annotations

import sys
import types
import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions
from backends.cpu.options import blas_threads
from tests.backends.examples import example
from tests.backends.oracles import f32_to_bf16_bits


def _i8(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return (rng.integers(-128, 128, (512, 128), dtype=np.int8),
            rng.integers(-128, 128, (512, 128), dtype=np.int8))


@pytest.mark.parametrize("options", [CpuOptions(blas_threads=None), CpuOptions(blas_threads=2),
                                     CpuOptions(fast_moves=False), CpuOptions(threads=1)])
def test_options_do_not_change_the_i8_gemm(options: CpuOptions) -> None:
    a, w = _i8(np.random.default_rng(5))
    want = a.astype(np.int64) @ w.astype(np.int64).T  # |sum| < 2^21: no wrap
    got = CpuBackend(options).run(example("gemm_i8", "gemm_i8_kernel"), (a, w))
    np.testing.assert_array_equal(got, want.astype(np.int32))


def test_float_threads_do_not_change_the_bf16_gemm() -> None:
    rng = np.random.default_rng(6)
    a = f32_to_bf16_bits(rng.uniform(-1, 1, (512, 128)).astype(np.float32))
    w = f32_to_bf16_bits(rng.uniform(-1, 1, (512, 128)).astype(np.float32))
    kern = example("gemm_bf16", "gemm_bf16_kernel")
    one = CpuBackend(CpuOptions(threads=1)).run(kern, (a, w))
    two = CpuBackend(CpuOptions(threads=2)).run(kern, (a, w))
    np.testing.assert_array_equal(np.asarray(one).view(np.uint16), np.asarray(two).view(np.uint16))


def test_blas_threads_restores_the_pool() -> None:
    from threadpoolctl import threadpool_info

    before = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    with blas_threads(1):
        inside = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    after = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    assert inside == [1] * len(before)
    assert after == before


def test_run_traces_a_kernel_once_per_target(monkeypatch: pytest.MonkeyPatch) -> None:
    kern = example("gemm_i8", "gemm_i8_kernel")
    calls = []
    trace = type(kern).trace
    monkeypatch.setattr(type(kern), "trace", lambda self, target=None: calls.append(target) or trace(self, target))
    backend = CpuBackend()
    a, w = _i8(np.random.default_rng(7))
    first = backend.run(kern, (a, w))
    second = backend.run(kern, (a, w))
    np.testing.assert_array_equal(first, second)
    assert calls == ["rngd"]


def test_a_blas_library_loaded_after_the_first_limit_is_limited_too(monkeypatch) -> None:
    """The libraries are scanned again once the process imported a module since the last scan
    (a second BLAS arriving with an extension module escaped the limit: [2, 1] threads)."""
    from ir import blas

    scans = []

    class Pool:  # a BLAS pool at two threads: a limit to one is set
        user_api = "blas"

        def get_num_threads(self):
            return 2

    class Controller:
        lib_controllers = [Pool()]

        def __init__(self):
            scans.append(len(sys.modules))

        def limit(self, limits, user_api):
            class Limiter:
                def restore_original_limits(self):
                    pass
            return Limiter()

    monkeypatch.setattr(blas, "ThreadpoolController", Controller)
    monkeypatch.setattr(blas, "_CONTROLLER", None)
    with blas.blas_threads(1):
        pass
    with blas.blas_threads(1):
        pass
    assert len(scans) == 1  # nothing imported in between: the scan is kept
    monkeypatch.setitem(sys.modules, "_a_module_with_its_own_blas", types.ModuleType("x"))
    with blas.blas_threads(1):
        pass
    assert len(scans) == 2
