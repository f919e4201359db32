"""Arrays of finished interpreter runs, reused by later ones: zeroed DM and TRF stores and
scratch arrays (`visa.interp.memory`). A shortcut: with the speed switch off
(`visa.interp.fast.speed`) nothing is pooled and every array is fresh.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from visa.interp.fast import speed

__all__ = ["ANY", "give_back", "make_room", "pooled_entry", "zeros"]

# Arrays of finished runs, by shape and dtype: zeroed DM and TRF stores, and scratch arrays a run
# overwrites entirely (a feed's stream). Reusing one costs a memset (a store) or nothing
# (scratch), where a fresh array costs a page fault on every page a run touches.
# Each entry: the array and the bytes of it some run has written (what it holds in memory: a
# DM store is allocated zero and mostly never touched), which the pool's budget counts.
_POOL: list[tuple[np.ndarray, int, Any]] = []
_POOL_LOCK = threading.Lock()
_POOL_ARRAYS = 32
_POOL_BYTES = 128 << 20
ANY = "any"    # a pooled array's bytes are anything (a scratch array's)


def pooled_entry(shape: tuple[int, ...], dtype: Any, zero: bool = False) -> tuple[np.ndarray, int, Any] | None:
    """A pooled (array, bytes written, what is not zero) of that shape and dtype; `zero`: only
    one whose bytes are known. What is not zero: None, `ANY`, (rows, columns): that corner
    of a 2-D store, or ("rows", ranges): those ranges of the first axis (a TRF store)."""
    dtype = np.dtype(dtype)
    if not speed.on():      # the plain path: every store and scratch array fresh
        return None
    with _POOL_LOCK:
        for i, (data, _, used) in enumerate(_POOL):
            if data.shape == shape and data.dtype == dtype and not (zero and used is not None and used[0] != "rows"):
                return _POOL.pop(i)
    return None


def make_room(entries: list[tuple[Any, int, Any]], held: int, arrays: int, budget: int) -> bool:
    """Drop entries (array, bytes held, ...) from the front of `entries` until one more
    array holding `held` bytes fits in `arrays` arrays and `budget` bytes; False (nothing
    dropped) when it could not fit even alone.

    Filled once, the pool used to refuse every later array, so a process that had run a few
    other kernels first kept the arrays of those forever and paid fresh ones (a page fault
    per page) on every run of the kernel it now repeats (a 512^3 bf16 GEMM: 7.5 -> 12 ms).
    Instead the oldest entries give way: the pool is a queue, arrays handed back at its end
    and taken from anywhere, so its front holds the arrays no run has asked for the longest."""
    if held > budget or arrays < 1:
        return False
    total = sum(n for _, n, _ in entries)
    while entries and (len(entries) >= arrays or total + held > budget):
        total -= entries.pop(0)[1]
    return True


def give_back(data: np.ndarray, resident: int | None = None, used: Any = None) -> None:
    """Pool `data`, of which `resident` bytes (None: all) have been written, within the
    budget; `used`: what of it is not zero (`pooled_entry`)."""
    held = data.nbytes if resident is None else resident
    if not speed.on():
        return
    with _POOL_LOCK:
        if make_room(_POOL, held, _POOL_ARRAYS, _POOL_BYTES):   # the oldest entries give way
            _POOL.append((data, held, used))


def zeros(shape: tuple[int, int]) -> tuple[np.ndarray, int, tuple[int, int]]:
    """A (slices, bytes) store, the bytes of it written before, and the corner (rows,
    columns) outside which it is zero: a pooled one of that shape when there is one."""
    entry = pooled_entry(shape, np.uint8)
    if entry is None:
        return np.zeros(shape, np.uint8), 0, (0, 0)
    data, held, used = entry
    return data, held, (shape if used is ANY else used or (0, 0))
