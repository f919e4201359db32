"""The interpreter's array pool makes room for the latest run (issue 38 item 2): once full,
its oldest arrays give way instead of the new ones being refused."""

from __future__ import annotations

import numpy as np

from tests.kernel_files import example
from tests.visa.test_interp import artifact, host_inputs
from visa.interp import execute_inout
from visa.interp.fast import pool
from visa.interp.fast.pool import make_room


def _entries(*held):
    return [(np.zeros(1), n, None) for n in held]


def test_the_oldest_entries_give_way_to_the_count():
    entries = _entries(1, 2, 3)
    assert make_room(entries, 1, 3, 100)
    assert [n for _, n, _ in entries] == [2, 3]


def test_the_oldest_entries_give_way_to_the_bytes():
    entries = _entries(40, 30, 20)
    assert make_room(entries, 60, 10, 100)
    assert [n for _, n, _ in entries] == [20]


def test_an_array_over_the_budget_is_refused_and_drops_nothing():
    entries = _entries(40, 30)
    assert not make_room(entries, 101, 10, 100)
    assert [n for _, n, _ in entries] == [40, 30]


def test_a_full_pool_keeps_the_arrays_of_the_latest_run(monkeypatch):
    """32 stale arrays fill the pool; a run hands its stores back all the same, and the
    next run of the kernel takes them from the pool."""
    monkeypatch.setattr(pool, "_POOL", [])
    stale = [np.zeros(7 + k, np.uint8) for k in range(pool._POOL_ARRAYS)]
    for a in stale:
        pool.give_back(a)
    assert len(pool._POOL) == pool._POOL_ARRAYS
    kernel = example("gemm_i8_kernel")
    art, arrays = artifact(kernel), host_inputs(kernel, np.random.default_rng(3))
    first = execute_inout(art, arrays, fast=True)
    assert any(not any(e[0] is a for a in stale) for e in pool._POOL), "the run's arrays were refused"
    hits = []
    real = pool.pooled_entry

    def counted(*args, **kw):
        entry = real(*args, **kw)
        hits.append(entry is not None and not any(entry[0] is a for a in stale))
        return entry

    monkeypatch.setattr(pool, "pooled_entry", counted)
    second = execute_inout(art, arrays, fast=True)
    assert any(hits), "the second run found none of the first run's arrays in the pool"
    for x, y in zip(first[0], second[0]):
        np.testing.assert_array_equal(x, y)
