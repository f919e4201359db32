"""backends/cpu/thread_pool.py: a large copy shared among threads writes the same bytes."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from backends.cpu import moves_strided, thread_pool
from backends.cpu.moves_strided import StridedForm


class _Recording:
    """A stand-in pool that runs each task at once and counts them."""

    def __init__(self) -> None:
        self.tasks = 0

    def submit(self, fn, *args):
        self.tasks += 1
        fn(*args)

        class Done:
            def result(self) -> None:
                return None

            def cancel(self) -> bool:
                return False

        return Done()


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shape", [(7,), (1, 1, 9), (5, 3), (1, 4, 6), (3, 1, 2, 5)])
def test_a_split_copy_writes_what_copyto_writes(monkeypatch, threads, shape):
    monkeypatch.setattr(thread_pool, "SPLIT_COPY_MIN", 0)
    recorder = _Recording()
    monkeypatch.setattr(thread_pool, "pool", lambda n: recorder)
    rng = np.random.default_rng(len(shape) * 10 + threads)
    src_base = rng.integers(0, 1 << 16, size=int(np.prod(shape)) * 2, dtype=np.uint16)
    src = as_strided(src_base, shape, tuple(2 * 2 * int(np.prod(shape[k + 1:])) for k in range(len(shape))))
    got = np.full(int(np.prod(shape)) * 3, 7, np.uint16)
    want = got.copy()
    strides = tuple(3 * 2 * int(np.prod(shape[k + 1:])) for k in range(len(shape)))
    thread_pool.copy_into(as_strided(got, shape, strides), src, threads)
    np.copyto(as_strided(want, shape, strides), src)
    assert np.array_equal(got, want)
    longest = next((n for n in shape if n > 1), 1)
    assert recorder.tasks == (min(threads, longest) - 1 if threads > 1 else 0)


def test_a_small_copy_stays_on_the_callers_thread(monkeypatch):
    recorder = _Recording()
    monkeypatch.setattr(thread_pool, "pool", lambda n: recorder)
    dst = np.zeros(1000, np.uint8)
    thread_pool.copy_into(dst, np.ones(1000, np.uint8), 4)
    assert recorder.tasks == 0 and dst.all()


def test_a_padded_dma_moved_on_two_threads_equals_one_thread():
    """apply_form's one-run copy (a DMA into a buffer half of which is padding), 8 MiB."""
    n = 1 << 22
    rows = np.random.default_rng(3).integers(0, 1 << 16, size=(1, n), dtype=np.uint16)
    form = StridedForm((n,), (1,), (2,), 0, 0, False)
    one = moves_strided.apply_form(rows, form, 2 * n, None, 1).copy()
    two = moves_strided.apply_form(rows, form, 2 * n, None, 2)
    assert np.array_equal(one, two)
    assert np.array_equal(two[0, :n], rows[0]) and not two[0, n:].any()
