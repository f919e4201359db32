"""The scratch of a run's dead values, given back to the run's arena (backends/cpu/arena.py)
once nothing still held shares its memory: no value, parameter or final.

The executor (backends/cpu/executor.py) tells a `Scratch` which values it lets go of, as
it pops them after their last read or replaces them by their full buffer. A dead value's
large allocation waits (`_Waiting`) until no held value views it; it is looked at again
only when one of the held values that shared it (its blockers) is let go of, and each held
value's memory owner is found once (`_held`), so a step costs a few dictionary look-ups,
not a walk of every held value's bases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from backends.cpu import arena

__all__ = ["Scratch", "memory"]


def memory(value: Any) -> np.ndarray | None:
    """The array whose memory `value` reads (a `LazyRows` or a `Compact` reads its base)."""
    if isinstance(value, np.ndarray):
        return value
    base = getattr(value, "base", None)
    return base if isinstance(base, np.ndarray) else None


_root = arena.memory_owner  # the array owning a buffer's memory


def _scratch_root(value: Any) -> np.ndarray | None:
    """The large allocation `value` is (a view of), or None."""
    buf = memory(value)
    if buf is None:
        return None
    raw = _root(buf)
    return None if raw is buf or raw.nbytes < arena.MIN_BYTES else raw


class _Waiting:
    """A dead value's scratch waiting for the arena, and the ids of the held values that
    shared its memory when last looked at (None: not looked at yet; -1 a parameter or a
    final): only their release can free it, so it is looked at again only then."""

    __slots__ = ("raw", "blockers")

    def __init__(self, raw: np.ndarray) -> None:
        self.raw = raw
        self.blockers: set[int] | None = None


def _held(x: Any, known: dict[int, tuple[Any, str, Any]]) -> tuple[str, Any]:
    """What memory a held value `x` keeps: ("owner", id of the array owning it), ("loose",
    the array: its owner is no array), ("unknown", None: a contraction stage's object may
    hold arrays) or ("none", None); found once per value object (`known`, by id, the
    object kept with it; an entry is dropped when its value is let go of)."""
    found = known.get(id(x))
    if found is not None and found[0] is x:
        return found[1], found[2]
    a = memory(x)
    if a is None:
        kind, what = ("unknown" if x is not None else "none"), None
    else:
        root = _root(a)
        kind, what = ("owner", id(root)) if root.base is None else ("loose", a)
    known[id(x)] = (x, kind, what)
    return kind, what


class Scratch:
    """One run's dead scratch (`pending`) and the memory owner of each held value (`known`)."""

    def __init__(self) -> None:
        self.pending: list[_Waiting] = []
        self.known: dict[int, tuple[Any, str, Any]] = {}
        self.released: set[int] = set()  # ids let go of since the last `recycle`

    def replaced(self, v: int, before: Any) -> None:
        """Value `v`'s object `before` was replaced (made its full buffer)."""
        self.released.add(v)
        self.known.pop(id(before), None)

    def dead(self, v: int, value: Any) -> None:
        """Value `v` (object `value`) was read for the last time: its scratch waits."""
        self.replaced(v, value)
        raw = _scratch_root(value)
        if raw is not None and not any(raw is w.raw for w in self.pending):
            self.pending.append(_Waiting(raw))

    def look_again(self) -> None:
        """Held values changed in ways not told (a loop's carried tensors, a final's value):
        every waiting buffer is looked at again at the next `recycle`."""
        for w in self.pending:
            w.blockers = None

    def recycle(self, env: dict[int, Any], params: Sequence[Any], finals: list[Any]) -> None:
        """Give the arena the waiting buffers that nothing held shares any more (while a held
        value is of a kind whose memory is not known, all wait). Only the buffers not
        looked at yet, or waiting on a value let go of since, are looked at."""
        released, self.released = self.released, set()
        if not self.pending or not released:
            return
        due = [w for w in self.pending if w.blockers is None or not w.blockers.isdisjoint(released)]
        if not due:
            return
        owners: dict[int, set[int]] = {}  # id of an array owning its memory -> the held values viewing it
        loose: list[tuple[int, np.ndarray]] = []  # held arrays whose memory's owner is not an array
        unknown: set[int] = set()  # held values whose memory `memory` does not tell
        for key, x in [*env.items(), *((-1, x) for x in params), *((-1, x) for x in finals)]:
            kind, what = _held(x, self.known)
            if kind == "owner":
                owners.setdefault(what, set()).add(key)
            elif kind == "loose":
                loose.append((key, what))
            elif kind == "unknown":
                unknown.add(key)
        for w in due:
            blockers = unknown | owners.get(id(w.raw), set())
            blockers |= {key for key, other in loose if np.may_share_memory(w.raw, other)}
            w.blockers = blockers
            if not blockers:
                arena.give_back_raw(w.raw)
        self.pending = [w for w in self.pending if w.blockers]
