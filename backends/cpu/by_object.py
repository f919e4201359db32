"""Values kept per live object, for objects whose own hash would cost too much (a traced
kernel, an op, a numpy buffer): keyed by `id`, with a weak reference telling a live
object from a later one that reuses its id.

Runs of the cpu backend may come from several threads at once: a `ByObject` is filled
under its lock (the sweep of dead entries walks the whole table), and read without it.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Generic, TypeVar

__all__ = ["ByObject"]

V = TypeVar("V")


class ByObject(Generic[V]):
    """`id(obj)` -> (a weak reference to `obj`, the value kept for it)."""

    def __init__(self) -> None:
        self._table: dict[int, tuple[weakref.ref[Any], V]] = {}
        self._lock = threading.Lock()

    def get(self, obj: Any) -> V | None:
        """The value kept for `obj` (None when there is none)."""
        found = self._table.get(id(obj))
        return found[1] if found is not None and found[0]() is obj else None

    def put(self, obj: Any, value: V) -> V:
        """Keep `value` for `obj` (dropping the entries of objects that have died); returns it."""
        with self._lock:
            for key, (ref, _) in list(self._table.items()):
                if ref() is None:
                    del self._table[key]
            self._table[id(obj)] = (weakref.ref(obj), value)
        return value

    def drop(self, obj: Any) -> None:
        """Forget the value kept for `obj`, if any."""
        if id(obj) not in self._table:
            return
        with self._lock:
            found = self._table.get(id(obj))
            if found is not None and found[0]() is obj:
                del self._table[id(obj)]
