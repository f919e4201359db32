"""The cpu backend's integer contraction cut among threads (backends/cpu/contract_int.py):
a folded matmul's outer rows shared by `CpuOptions.threads` threads, each casting its part
into the result, gives the same bits as one thread and as an int64 numpy oracle; and an
i8 GEMM tiled like examples/gemm_tiled.py stays exact with every fast path of the run."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, contract_int, thread_pool
from tests.kernel_files import EXAMPLES_DIR, load_source


def tiled_i8(mt: int, nt: int, k: int = 128):
    """examples/gemm_tiled.py with i8 operands (one flit of 32 per collect, 64 per
    contraction step), an i32 output, MT x NT tiles of 512 x 512 and K."""
    text = (EXAMPLES_DIR / "gemm_tiled.py").read_text()
    text = re.sub(r"^MT = \d+", f"MT = {mt}", text, flags=re.M)
    text = re.sub(r"^NT = \d+", f"NT = {nt}", text, flags=re.M)
    text = text.replace("K=128", f"K={k}").replace("bf16", "i8").replace("HbmTensor[f32", "HbmTensor[i32")
    for side in ("N % 8, N / 8 % 4", "M % 32, N / 8 % 4"):
        text = text.replace(f'.fetch(m("{side}"), m("K"))', f'.fetch(m("{side}"), m("K")).fetch_cast(i8)')
    text = text.replace('K / 32"), m("K % 32"))', 'K / 64"), m("K % 64"))')
    text = text.replace('K / 16"), m("K % 16"))', 'K / 32"), m("K % 32"))')
    return load_source(text, f"tiled_i8_{mt}x{nt}_{k}").gemm_tiled


@pytest.fixture
def shares(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of parts of every folded matmul, the threshold at one multiply-add."""
    seen: list[int] = []
    parts = contract_int._parts
    monkeypatch.setattr(contract_int, "PARALLEL_MIN", 1)
    monkeypatch.setattr(contract_int, "_parts", lambda *a: seen.append(len(parts(*a))) or parts(*a))
    return seen


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_shared_matmul_equals_one_thread_and_the_oracle(shares: list[int], threads: int) -> None:
    kernel = tiled_i8(2, 1)
    rng = np.random.default_rng(threads)
    a = rng.integers(-128, 128, (1024, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    a[:7] = -128  # the extremes: every partial sum stays exact in float32
    w[:5] = -128
    want = a.astype(np.int64) @ w.astype(np.int64).T
    outs = {}
    for t in (1, threads):
        out = np.full((1024, 512), -1, np.int32)
        CpuBackend(CpuOptions(threads=t)).run(kernel, (a, w, out))
        outs[t] = out
    assert np.array_equal(outs[1], want)
    assert np.array_equal(outs[threads], want)
    assert 1 in shares and max(shares) == min(threads * contract_int.PIECES, 16)  # 16 distinct stream rows per tile


def test_blas_pool_left_alone_means_no_shares(shares: list[int]) -> None:
    """With `blas_threads=None` BLAS keeps its own pool: the backend adds no threads."""
    kernel = tiled_i8(1, 1)
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    out = np.zeros((512, 512), np.int32)
    CpuBackend(CpuOptions(threads=4, blas_threads=None)).run(kernel, (a, w, out))
    assert np.array_equal(out, a.astype(np.int64) @ w.astype(np.int64).T)
    assert shares and set(shares) == {1}


def test_a_held_back_thread_leaves_its_parts_to_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parts are taken one at a time: a helper thread the machine holds back (its pool's
    thread busy until the run ends) finds them taken by the calling thread, every part is
    computed once, and the run does not wait for the helper that never started."""
    held, busy = threading.Event(), ThreadPoolExecutor(max_workers=1)
    busy.submit(held.wait)  # the pool's one thread taken: what is submitted next waits
    threading.Timer(5.0, held.set).start()  # (a run that waits for the helper ends all the same)
    helpers: list = []

    class Held:
        def submit(self, fn, *args):
            helpers.append(busy.submit(fn, *args))
            return helpers[-1]

    done: list[str] = []
    folded = contract_int._folded
    monkeypatch.setattr(contract_int, "PARALLEL_MIN", 1)
    monkeypatch.setattr(thread_pool, "pool", lambda n: Held())
    monkeypatch.setattr(contract_int, "_folded",
                        lambda *a, **kw: done.append(threading.current_thread().name) or folded(*a, **kw))
    kernel = tiled_i8(1, 1)
    rng = np.random.default_rng(6)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    out = np.zeros((512, 512), np.int32)
    CpuBackend(CpuOptions(threads=2)).run(kernel, (a, w, out))
    held.set()
    busy.shutdown()
    assert helpers and all(h.cancelled() for h in helpers)  # never waited for
    assert np.array_equal(out, a.astype(np.int64) @ w.astype(np.int64).T)
    assert len(done) == 2 * contract_int.PIECES and set(done) == {threading.main_thread().name}
