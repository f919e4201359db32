"""Results computed from a buffer's contents, kept for the rest of a run while they stand.

A tiled kernel's contractions often read one operand again and again: a stream fetched
from the same DM tensor for every column tile (issue 61: `drawn_s101_0` widens the same
512 x 256 bf16 stream to float32, scans its bounds and compares its digits three times a
run). `get` / `put` keep such a result in the run's arena (backends/cpu/arena.py), keyed by
a `kind` (one entry per kind: the latest), a key naming how it was computed (the gather,
the digit order...), and a *stamp* of the input's memory: its owner (the array that owns
the memory, held by the entry so its id is not reused), the byte offset, shape, strides and
dtype of the view read, and how often the run has handed that memory out again or written
it in place (`Arena.writes`: bumped by `Arena.take` and by the executor before a handler
writes a buffer in place, `arena.written`). The executor writes no buffer otherwise after
its maker returned, so an unchanged stamp means unchanged contents. That is the rule a new
handler keeps: it writes an operand in place only when the executor allows it (`_owned`, which
reports the write); a handler writing any other buffer it did not make would leave a kept
result stale, and nothing would say so.

Entries live in the arena, so they end with the run (`Arena.release`), and a nested run or
a run on another thread has its own; outside a run (no arena) nothing is kept. The executor
drops them all earlier (`forget_all`) once no later step of the run can read them (issue 61,
first-run memory: a kernel's widened operands were held to its end, 4.4 MiB of scratch
beside `drawn_s1_3`'s commit and tile write).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from backends.cpu import arena

__all__ = ["get", "put", "forget", "forget_all", "stamp"]


def stamp(array: np.ndarray, run: arena.Arena) -> tuple:
    """(the memory owner of `array`, the tuple telling its current contents in `run`)."""
    owner = arena.memory_owner(array)
    offset = array.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    return owner, (id(owner), offset, array.shape, array.strides, array.dtype.str, run.writes.get(id(owner), 0))


def get(kind: str, array: np.ndarray, key: Hashable) -> Any:
    """The value `put` kept for `kind` from `array`'s current contents with `key`, else None."""
    run = arena.current()
    entry = None if run is None else run.memo.get(kind)
    if entry is None:
        return None
    kept_key, kept_stamp, _owner, value, _drop = entry
    if kept_key is not key and kept_key != key:
        return None
    return value if stamp(array, run)[1] == kept_stamp else None


def put(kind: str, array: np.ndarray, key: Hashable, value: Any,
        drop: Callable[[Any], object] | None = None) -> bool:
    """Keep `value`, computed from `array`'s current contents with `key`, as `kind`'s entry
    (the one before it dropped: `drop(value)` called for it, e.g. to give a buffer back to
    the arena); False outside a run (nothing kept: the caller keeps ownership)."""
    run = arena.current()
    if run is None:
        return False
    old = run.memo.get(kind)
    owner, now = stamp(array, run)
    run.memo[kind] = (key, now, owner, value, drop)
    if old is not None and old[4] is not None and old[3] is not value:
        old[4](old[3])
    return True


def forget(kind: str) -> None:
    """Drop `kind`'s entry now (its `drop` called): a caller about to compute a new one frees
    the old one's buffer first, so the new one can take it instead of new memory."""
    run = arena.current()
    old = None if run is None else run.memo.pop(kind, None)
    if old is not None and old[4] is not None:
        old[4](old[3])


def forget_all() -> None:
    """Drop every entry of the current run now (each one's `drop` called): no later step
    reads them (backends/cpu/executor.py), so their buffers serve the run's next requests."""
    run = arena.current()
    if run is None:
        return
    entries, run.memo = run.memo, {}
    for old in entries.values():
        if old[4] is not None:
            old[4](old[3])
