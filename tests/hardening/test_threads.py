"""Kernels run and compiled from several threads at once: the first runs of a fresh kernel
object race for its trace, the cpu backend's caches and the BLAS pool. Threads start
together (a barrier) with the interpreter switching threads as often as it can, and every
result is compared with a numpy oracle and with a run on one thread."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import npu_opt
from ir.errors import NpuOptError
from npu_opt.device import DeviceKernel
from npu_opt.trace import Tracer, current, tracing
from tests.backends import kernels_small as k

THREADS = 4


@pytest.fixture(autouse=True)
def _switch_often() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _together(fn: Callable[[], Any], n: int = THREADS) -> list[Any]:
    """`fn()` on `n` threads released at the same moment; their results (or their error)."""
    barrier = threading.Barrier(n)

    def go() -> Any:
        barrier.wait()
        return fn()

    with ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(go) for _ in range(n)]
        return [f.result() for f in futures]


def _fresh(kernel: DeviceKernel) -> DeviceKernel:
    """A new kernel object for the same function: nothing of it is cached yet."""
    return DeviceKernel(kernel.fn, kernel.chips, kernel.pe)


def _i8_inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(-128, 128, (16, 64), dtype=np.int8),
            rng.integers(-128, 128, (8, 64), dtype=np.int8))


def _i8_oracle(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """small_i8: x @ w.T, and the i8 wrap of sum_a sum_e (x[a, e] + 128) * w[n, e]."""
    x64, w64 = x.astype(np.int64), w.astype(np.int64)
    total = ((x64 + 128).sum(axis=0)[None, :] * w64).sum(axis=1)
    return x64 @ w64.T, ((total + 128) % 256 - 128).astype(np.int8)


def _same(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> bool:
    return len(got) == len(want) and all(g.dtype == w.dtype and np.array_equal(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("backend, rounds", [("cpu", 12), ("visa", 5)])
def test_first_runs_of_a_fresh_kernel_from_threads(backend: str, rounds: int) -> None:
    x, w = _i8_inputs(7)
    y, z = _i8_oracle(x, w)
    alone = npu_opt.run(_fresh(k.small_i8), x, w, backend=backend)
    assert np.array_equal(alone[0], y) and np.array_equal(alone[1], z)
    for _ in range(rounds):
        kernel = _fresh(k.small_i8)
        for got in _together(lambda: npu_opt.run(kernel, x, w, backend=backend)):
            assert _same(got, alone)


def test_compile_from_threads_gives_the_text_of_one_thread() -> None:
    kernels = (k.small_i8, k.small_bf16)
    alone = {kern.name: npu_opt.compile(_fresh(kern)).text for kern in kernels}
    for _ in range(3):
        fresh = [_fresh(kern) for kern in kernels]
        for texts in _together(lambda: [npu_opt.compile(kern).text for kern in fresh]):
            assert texts == [alone[kern.name] for kern in kernels]


class _Counting(DeviceKernel):
    def __init__(self, kernel: DeviceKernel) -> None:
        super().__init__(kernel.fn, kernel.chips, kernel.pe)
        self.traces = 0

    def trace(self, target: Any = None) -> Any:
        self.traces += 1
        return super().trace(target)


def test_first_runs_from_threads_trace_once() -> None:
    x, w = _i8_inputs(3)
    kernel = _Counting(k.small_i8)
    _together(lambda: npu_opt.run(kernel, x, w))
    assert kernel.traces == 1
    npu_opt.run(kernel, x, w)
    assert kernel.traces == 1


def test_a_trace_on_one_thread_is_not_seen_from_another() -> None:
    inside, checked = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def tracer_thread() -> None:
        with tracing(Tracer("a", 1)) as mine:
            inside.set()
            checked.wait(10)
            seen["tracer"] = current() is mine

    def other_thread() -> None:
        inside.wait(10)
        try:
            seen["other"] = current()
        except NpuOptError as e:
            seen["other"] = e.code
        checked.set()

    threads = [threading.Thread(target=tracer_thread), threading.Thread(target=other_thread)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"tracer": True, "other": "USAGE"}


class _Pool:
    """A process-wide BLAS pool as threadpoolctl drives it: a limit remembers the size it
    found and puts it back when restored (the real pool's size read from another thread
    depends on the BLAS build, so the test counts on this model)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.limits = 0  # limiters made

    @property
    def lib_controllers(self) -> list[Any]:
        pool = self

        class Blas:
            user_api = "blas"

            def get_num_threads(self) -> int:
                return pool.size

        return [Blas()]

    def limit(self, limits: int, user_api: str) -> Any:
        pool, found = self, self.size
        self.size = limits
        self.limits += 1

        class Limiter:
            def restore_original_limits(self) -> None:
                pool.size = found

            def __enter__(self) -> Limiter:
                return self

            def __exit__(self, *exc: object) -> None:
                self.restore_original_limits()

        return Limiter()


def test_overlapping_runs_leave_the_blas_pool_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    from ir import blas as options      # the cpu backend's and the interpreter's limit

    pool = _Pool(2)
    monkeypatch.setattr(options, "_CONTROLLER", pool)
    monkeypatch.setattr(options, "_CONTROLLER_MODULES", len(sys.modules))   # made after the last import
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    during: list[int] = []

    def first() -> None:  # enters first, leaves first
        with options.blas_threads(1):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second() -> None:
        a_in.wait(10)
        with options.blas_threads(1):
            b_in.set()
            a_out.wait(10)
            during.append(pool.size)  # still limited while this run goes on

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert during == [1]
    assert pool.size == 2


def test_a_limit_the_pool_already_has_makes_no_limiter(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block asking for the threads every BLAS pool has already leaves the pools alone (a
    limiter and its restore cost ~75 us, a contraction's whole BLAS call at small sizes);
    one asking for fewer limits them and puts them back."""
    from ir import blas as options

    pool = _Pool(1)
    monkeypatch.setattr(options, "_CONTROLLER", pool)
    monkeypatch.setattr(options, "_CONTROLLER_MODULES", len(sys.modules))
    with options.blas_threads(1):
        assert pool.size == 1
    assert pool.limits == 0 and pool.size == 1
    pool.size = 2
    with options.blas_threads(1):
        assert pool.size == 1
    assert pool.limits == 1 and pool.size == 2


def test_a_backend_is_made_once_when_threads_ask_together() -> None:
    from backends import _Registry

    registry = _Registry()
    made = _together(lambda: registry["cpu"], n=8)
    assert all(b is made[0] for b in made) and made[0].name == "cpu"
    assert set(registry) == {"typecheck", "cpu", "npu", "visa"} and "gpu" not in registry
    with pytest.raises(KeyError):
        registry["gpu"]
