"""The TRF load's blocked copy (`visa.interp.trf._store`, issue 29): a large load of a run of
slices is copied a few slices at a time; the bytes must be those of the one-piece copy and
of a plain loop over the cells, whatever the run's start and length."""

from __future__ import annotations

import numpy as np
import pytest

from visa.interp import trf

ROW = np.dtype((np.void, 32))


def _case(rng, n: int, slices: int):
    held = rng.integers(0, 256, (n, 3, 5, 32), dtype=np.uint8).view(ROW)[..., 0]   # (rows, lanes, rows per lane)
    dest = rng.integers(0, 256, (3, 5, slices, 32), dtype=np.uint8).view(ROW)[..., 0]
    return held, dest


@pytest.mark.parametrize("start, n", [(0, 256), (3, 21), (5, 8), (0, 7), (17, 100)])
def test_blocked_store_writes_what_a_loop_writes(start, n, monkeypatch):
    rng = np.random.default_rng(start * 1000 + n)
    held, dest = _case(rng, n, 300)
    want = dest.copy()
    for k in range(n):  # the oracle: cell by cell
        for lane in range(3):
            for r in range(5):
                want[lane, r, start + k] = held[k, lane, r]
    whole = dest.copy()
    trf._store(whole, slice(start, start + n), held.transpose(1, 2, 0))
    monkeypatch.setattr(trf, "_BLOCKED", 0)  # every copy by blocks
    blocked = dest.copy()
    trf._store(blocked, slice(start, start + n), held.transpose(1, 2, 0))
    assert whole.tobytes() == want.tobytes() and blocked.tobytes() == want.tobytes()


def test_scattered_slices_are_copied_whole(monkeypatch):
    rng = np.random.default_rng(1)
    held, dest = _case(rng, 4, 20)
    at = np.array([1, 5, 6, 19])
    monkeypatch.setattr(trf, "_BLOCKED", 0)
    trf._store(dest, at, held.transpose(1, 2, 0))
    assert all(dest[lane, r, at[k]].tobytes() == held[k, lane, r].tobytes()
               for k in range(4) for lane in range(3) for r in range(5))


@pytest.mark.parametrize("slices, stored, one_copy", [
    (np.arange(0, 64, 2), np.arange(32) % 4 + 7, True),        # every 2nd slice, rows 7..10 over and over
    (np.arange(5, 37), np.arange(32) % 16 + 1, True),          # a run, a period of 16
    (np.arange(0, 64, 2), np.arange(32) // 8, False),          # each row in 8 slices side by side: not a cycle
    (np.array([1, 4, 6, 9]), np.array([0, 1, 0, 1]), False),   # not a stepped run
])
def test_a_switch_broadcast_repeating_its_rows_is_stored_in_one_copy(slices, stored, one_copy, monkeypatch):
    """`_store_repeats`: slice slices[i] takes held row stored[i]; when the rows cycle over a
    stepped run of slices, one copy writes them all (`_store_periodic`), not a pass per row."""
    rng = np.random.default_rng(len(slices) + int(stored[1]))
    held, dest = _case(rng, 20, 70)
    want = dest.copy()
    for i, s in enumerate(slices):   # the oracle: slice by slice
        for lane in range(3):
            for r in range(5):
                want[lane, r, s] = held[stored[i], lane, r]
    copies = []
    periodic = trf._store_periodic
    monkeypatch.setattr(trf, "_store_periodic", lambda *a: (copies.append(a[-1]), periodic(*a)))
    trf._store_repeats(dest, slices, stored, held)
    assert dest.tobytes() == want.tobytes()
    assert len(copies) == one_copy
