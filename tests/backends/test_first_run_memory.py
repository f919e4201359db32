"""A kernel's first run on the cpu backend hands back the memory its ops free (issue 61,
first-run memory): after each op the heap is trimmed and the run's free scratch buffers give
up their pages, every time they are free (`arena.trim_heap`), in the first run only; an
integer matmul computes its products a bounded block of rows at a time. Every result equals
a numpy oracle. (A take that is a strided read keeps no index:
tests/backends/test_contract_blas.py `test_the_products_hold_result_cells_in_runs`.)"""

from __future__ import annotations

import functools
import mmap

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, arena, contract_int
from benchmarks.drawn_kernels import pinned

BIG = (arena.MIN_BYTES // 4, 2)  # 2 x MIN_BYTES of int32


def _zeroed(buf: np.ndarray) -> bool:
    """Whether `buf`'s whole pages read zero (the system dropped them; the partial pages at
    either end are kept)."""
    return np.count_nonzero(buf.view(np.uint8) == 0) >= buf.nbytes - 2 * mmap.PAGESIZE


def test_a_first_run_drops_its_free_buffers_every_time_they_are_free() -> None:
    """In a first run a buffer given back loses its pages at the next trim, again after it
    was taken and given back once more (`make_room` drops a buffer once a run); a buffer
    still handed out keeps them, and a later run's trim does nothing."""
    scratch = arena.Arena()
    with arena.scope(scratch):
        scratch.first = True
        idle, held = arena.empty(BIG, np.int32), arena.empty(BIG, np.int32)
        idle[...], held[...] = 7, 7
        assert arena.give_back(idle) and arena.trim_heap()
        assert _zeroed(idle) and (held == 7).all()
        again = arena.empty(BIG, np.int32)
        assert again.__array_interface__["data"][0] == idle.__array_interface__["data"][0]
        again[...] = 5
        assert arena.give_back(again) and arena.trim_heap()
        assert _zeroed(again)
    with arena.scope(scratch):  # a later run: not a first one
        kept = arena.empty(BIG, np.int32)
        kept[...] = 7
        assert arena.give_back(kept) and not arena.trim_heap()
        assert (kept == 7).all()
    assert not arena.trim_heap()  # outside a run


@functools.cache
def _small_gemm():
    return pinned("trim", "out[m,n] = a[m,k] * w[n,k]", "i8:i32", dict(m=64, n=64, k=64),
                  dict(placement="2x2 of 32x32, on 1/16 of the slices", trf="w", packet=64, pieces=1), "gemm")


def test_only_a_kernels_first_run_trims_the_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    """`malloc_trim` after every op of the first run of a kernel on a backend, in none of its
    later runs; both runs equal the int64 oracle."""
    calls: list[int] = []
    monkeypatch.setattr(arena, "_MALLOC_TRIM", lambda pad: calls.append(pad) or 1)
    d, backend = _small_gemm(), CpuBackend()
    arrays = d.inputs(np.random.default_rng(5))
    want = d.oracle(*arrays)
    counts = []
    for _ in range(2):
        got = [x.copy() for x in arrays]
        backend.run(d.kernel, tuple(got))
        assert np.array_equal(got[-1], want)
        counts.append(len(calls))
    assert counts[0] > 1 and counts[1] == counts[0]


def test_an_integer_matmul_in_blocks_of_rows_equals_the_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `BLOCK_BYTES` below one tile's products the folded matmul is made in several
    blocks of outer rows, one thread or two, each cast into its result cells: int64 numpy's
    values (the extremes included)."""
    blocks: list[int] = []
    cut = contract_int._blocks
    monkeypatch.setattr(contract_int, "BLOCK_BYTES", 1 << 12)
    monkeypatch.setattr(contract_int, "_blocks", lambda *a: blocks.append(len(cut(*a))) or cut(*a))
    d = _small_gemm()
    arrays = d.inputs(np.random.default_rng(6))
    arrays[0][:3], arrays[1][:2] = -128, -128
    want = d.oracle(*arrays)
    for threads in (1, 2):
        got = [x.copy() for x in arrays]
        CpuBackend(CpuOptions(threads=threads)).run(d.kernel, tuple(got))
        assert np.array_equal(got[-1], want)
    assert blocks and max(blocks) > 1
