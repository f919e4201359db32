"""A kernel's first run on the cpu backend hands back heap memory that its slow ops freed
(backends/cpu/heap_trim.py), and an integer matmul makes its products a bounded block of
rows at a time (issue 61, first-run memory). Results are checked against an int64 numpy
oracle. (A take that is a strided read keeps no index: tests/backends/test_contract_blas.py
`test_the_products_hold_result_cells_in_runs`.)"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, contract_int, heap_trim
from benchmarks.drawn_kernels import pinned

MIB = 1 << 20


def _trims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    monkeypatch.setattr(heap_trim, "_TRIM", lambda pad: calls.append(pad) or 1)
    return calls


def test_the_levels_of_a_first_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every op slow, `TRIM_BYTES` 1 MiB, a run starting at 10 MiB resident: a trim each
    time the size passes its level at the last trim by 1 MiB, or by a quarter of the growth
    up to that level when that is more. Trims at 11.5 (10 + 1), 13 (11.5 + 1), 16 (13 + 1)
    and 18 (16 + 6 / 4); none at 12.4 nor at 17.4, nor when the size falls back (11)."""
    trims = _trims(monkeypatch)
    monkeypatch.setattr(heap_trim, "SLOW_OP", 0.0)
    monkeypatch.setattr(heap_trim, "TRIM_BYTES", MIB)
    seq = [10, 10.5, 11.5, 11, 12.4, 13, 16, 17.4, 18]
    sizes = iter(int(v * MIB) for v in seq)
    monkeypatch.setattr(heap_trim, "resident", lambda: next(sizes))
    with heap_trim.first_run(True):
        done = [heap_trim.after_op() for _ in seq[1:]]
    assert done == [False, True, False, False, True, True, False, True]
    assert len(trims) == 4


def test_fast_ops_and_later_runs_read_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """An op under `SLOW_OP` reads no resident size; a run that is not its kernel's first
    looks at nothing."""
    trims = _trims(monkeypatch)
    reads: list[int] = []
    monkeypatch.setattr(heap_trim, "resident", lambda: reads.append(1) or 0)
    monkeypatch.setattr(heap_trim, "SLOW_OP", 3600.0)
    with heap_trim.first_run(True):
        assert not heap_trim.after_op()
    assert reads == [1]  # the run's start only
    monkeypatch.setattr(heap_trim, "SLOW_OP", 0.0)
    with heap_trim.first_run(False):
        assert not heap_trim.after_op()
    assert reads == [1] and trims == []


@functools.cache
def _small_gemm():
    return pinned("trim", "out[m,n] = a[m,k] * w[n,k]", "i8:i32", dict(m=64, n=64, k=64),
                  dict(placement="2x2 of 32x32, on 1/16 of the slices", trf="w", packet=64, pieces=1), "gemm")


def test_only_a_kernels_first_run_on_a_backend_trims(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every op counted slow and every size a new high: the first run trims after its ops,
    the second run of the same kernel on the same backend never; both equal the oracle."""
    trims = _trims(monkeypatch)
    monkeypatch.setattr(heap_trim, "SLOW_OP", 0.0)
    monkeypatch.setattr(heap_trim, "TRIM_BYTES", 0)
    grow = iter(range(0, 1 << 40, MIB))
    monkeypatch.setattr(heap_trim, "resident", lambda: next(grow))
    d, backend = _small_gemm(), CpuBackend()
    arrays = d.inputs(np.random.default_rng(5))
    want = d.oracle(*arrays)
    counts = []
    for _ in range(2):
        got = [x.copy() for x in arrays]
        backend.run(d.kernel, tuple(got))
        assert np.array_equal(got[-1], want)
        counts.append(len(trims))
    assert counts[0] > 1 and counts[1] == counts[0]


def test_an_integer_matmul_in_blocks_of_rows_equals_the_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `BLOCK_BYTES` below one tile's products the folded matmul is made in several
    blocks of outer rows, on one thread or two, each cast into its result cells: int64
    numpy's values (the extremes included)."""
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
