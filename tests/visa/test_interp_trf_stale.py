"""What a pooled TRF store's earlier run left (`visa.interp.trf_stale`, issue 61 item 2): a load
into half the slices records those slices, so the next run's load of the same rows there
zeroes nothing first, and a write leaves the rows it does not touch for a later write to
cover; whatever a reader sees is zero where this run has not written."""

from __future__ import annotations

import numpy as np
import pytest

from tu_ops.target import get_target
from visa.interp import trf_stale
from visa.interp.fast import pool
from visa.interp.memory import Memory

HALF = slice(0, 256, 2)    # a placement on 1/2 of the slices


@pytest.fixture(autouse=True)
def _empty_pool(monkeypatch):
    """An empty store pool, so the store a test hands back is the one the next Memory takes
    (earlier tests in the process leave pooled stores of the same shape)."""
    monkeypatch.setattr(pool, "_POOL", [])


def _pooled(rows: list[tuple[int, int, slice | None, int]]) -> np.ndarray:
    """A store a finished run wrote (lanes 8: rows `first .. first + n - 1` of each lane,
    the slices `at`, the byte `fill`) and handed back to the pool."""
    mem = Memory(get_target("rngd"))
    for first, n, at, fill in rows:
        mem.trf_rows(0, 0, 8, first, n, at or False)[:, :, at or slice(None)] = fill
    store = mem.trf(0, 0)
    mem.release()
    return store


def _rows(first: int, n: int) -> np.ndarray:
    """Store rows `first .. first + n - 1` of every one of 8 lanes (256 rows a lane)."""
    return np.array([lane * 256 + first + k for lane in range(8) for k in range(n)])


def test_the_next_runs_load_of_the_same_rows_and_slices_zeroes_nothing(monkeypatch):
    store = _pooled([(3, 2, HALF, 0x5C), (40, 4, HALF, 0x11)])
    zeroed = []
    monkeypatch.setattr(trf_stale, "zero", lambda data, spans: (zeroed.extend(spans), _zero(data, spans)))
    again = Memory(get_target("rngd"))
    rows = again.trf_rows(0, 0, 8, 3, 2, HALF)
    assert again._trf[(0, 0)] is store and zeroed == []
    assert (rows[:, :, HALF] == 0x5C).all()             # left for the load, which writes every byte there
    assert (store[_rows(40, 4)][:, HALF] == 0x11).all()  # another load's rows: left for it
    again.trf_rows(0, 0, 8, 40, 4, HALF)
    assert zeroed == []


def _zero(data, spans):
    for lo, hi, s in spans:
        data[lo:hi, slice(None) if s is None else slice(*s)] = 0


def test_what_a_write_does_not_cover_is_zero_before_it_and_before_any_read():
    store = _pooled([(3, 2, HALF, 0x5C), (40, 4, None, 0x11)])
    again = Memory(get_target("rngd"))
    rows = again.trf_rows(0, 0, 8, 3, 2, slice(1, 256, 2))    # the other half: the earlier bytes zeroed
    assert not rows.any() and (store[_rows(40, 4)] == 0x11).all()
    rows[:, :, 1::2] = 7
    seen = again.trf(0, 0)                                     # a reader: every other stale byte zeroed
    want = np.zeros_like(seen)
    want[_rows(3, 2), 1::2] = 7
    assert seen is store and np.array_equal(seen, want)
    again.release()
    third = Memory(get_target("rngd"))
    part = third.trf_rows(0, 0, 8, 3, 1)                      # may leave bytes: rows 3 of every slice zeroed
    assert not part.any() and (store[_rows(4, 1), 1::2] == 7).all()
    assert not third.trf(0, 0).any()


def test_cut_keeps_other_rows_and_zeroes_the_slices_a_write_leaves():
    stale = [(0, 10, None), (20, 30, (0, 256, 2))]
    kept, now = trf_stale.cut(stale, 5, 25, (0, 256, 2), 256)
    assert kept == [(0, 5, None), (25, 30, (0, 256, 2))]
    assert now == [(5, 10, (1, 256, 2))]                      # every slice but the written ones
    assert trf_stale.cut(stale, 5, 25, True, 256) == ([(0, 5, None), (25, 30, (0, 256, 2))], [])
    assert trf_stale.cut(stale, 5, 25, False, 256)[1] == [(5, 10, None), (20, 25, (0, 256, 2))]
    assert trf_stale.cut([(0, 4, None)], 0, 4, (0, 256, 3), 256)[1] == [(0, 4, None)]   # not one stepped rest
