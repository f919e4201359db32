"""ir.exact_sum: the batched-matmul integer sum equals an int64 einsum (numpy's, the
oracle) on operands with every mix of batch, row, column, summed and broadcast axes."""

from __future__ import annotations

import numpy as np
import pytest

from ir import exact_sum as exact_sum_module
from ir.exact_sum import exact_sum


def _case(rng, nd):
    sizes = rng.integers(1, 5, nd)
    a_shape = [int(n) if rng.random() < 0.7 else 1 for n in sizes]
    b_shape = [int(n) if rng.random() < 0.7 else 1 for n in sizes]
    keep = sorted(int(k) for k in rng.choice(nd, int(rng.integers(0, nd + 1)), replace=False))
    a = rng.integers(-128, 128, a_shape).astype(np.int8)
    b = rng.integers(-128, 128, b_shape).astype(np.int32)
    return a, b, keep


@pytest.mark.parametrize("seed", range(40))
def test_equals_int64_einsum(seed):
    rng = np.random.default_rng(seed)
    a, b, keep = _case(rng, int(rng.integers(1, 6)))
    labels = list(range(a.ndim))
    want = np.einsum(a.astype(np.int64), labels, b.astype(np.int64), labels, keep)
    got = exact_sum(a, b, keep, np.float64)
    assert got.dtype == np.int64
    assert got.shape == want.shape
    assert np.array_equal(got, want)


def test_float32_is_exact_below_its_bound():
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (3, 64, 1, 128), dtype=np.int8)
    b = rng.integers(-128, 128, (3, 1, 8, 128), dtype=np.int8)
    want = np.einsum(a.astype(np.int64), [0, 1, 2, 3], b.astype(np.int64), [0, 1, 2, 3], [0, 1, 2])
    assert np.array_equal(exact_sum(a, b, [0, 1, 2], np.float32), want)


def test_rank_mismatch_is_refused():
    with pytest.raises(ValueError):
        exact_sum(np.zeros((2, 2), np.int8), np.zeros(2, np.int8), [0], np.float32)


@pytest.mark.parametrize("seed", range(20))
def test_blocks_of_batches_give_the_same_sums(seed, monkeypatch):
    """With a tiny `CHUNK` every batched case runs in blocks of one or a few batches (the
    last one short): the sums are still numpy's int64 einsum."""
    monkeypatch.setattr(exact_sum_module, "CHUNK", 1 + seed % 7 * 5)
    rng = np.random.default_rng(100 + seed)
    a = rng.integers(-128, 128, (int(rng.integers(2, 9)), 3, 1, 5)).astype(np.int8)
    b = rng.integers(-128, 128, (a.shape[0], 1, 4, 5)).astype(np.int8)
    keep = [0, 1, 2] if seed % 2 else [0, 2]
    want = np.einsum(a.astype(np.int64), [0, 1, 2, 3], b.astype(np.int64), [0, 1, 2, 3], keep)
    for alloc in (None, np.empty):
        assert np.array_equal(exact_sum(a, b, keep, np.float32, alloc), want)


def test_a_large_unbatched_matmul_split_in_row_halves_gives_the_same_sums(monkeypatch):
    """`parallel` gets the two row halves of one large unbatched matmul (the VISA
    interpreter runs them on two threads); run in reverse order here, the sums are numpy's."""
    monkeypatch.setattr(exact_sum_module, "SPLIT_MIN", 1)
    rng = np.random.default_rng(12)
    a = rng.integers(-128, 128, (1, 37, 64))
    b = rng.integers(-128, 128, (1, 29, 64))
    ran = []

    def backwards(tasks):
        ran.append(len(tasks))
        for task in reversed(tasks):
            task()

    got = exact_sum(a[:, :, None, :], b[:, None, :, :], [0, 1, 2], np.float64, parallel=backwards)
    assert ran == [2]
    want = np.einsum("bik,bjk->bij", a.astype(np.int64), b.astype(np.int64))
    assert got.dtype == np.int64 and np.array_equal(got, want)
