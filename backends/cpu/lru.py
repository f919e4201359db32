"""The cpu backend's caches.

`Lru`: values kept by key, the least recently used dropped past a budget (a count of
entries, or their weight: the bytes of a move plan's index arrays). Runs may come from
several threads at once: every access holds the map's lock.

`ByObject`: values kept per live object, for objects whose own hash would cost too much
(a traced kernel, an op, a numpy buffer): keyed by `id`, with a weak reference telling a
live object from a later one that reuses its id. It is filled under its lock (the sweep
of dead entries walks the whole table), and read without it.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["MISSING", "Lru", "ByObject"]

MISSING = object()
"""A `get` default telling a key kept with the value None from a key not kept."""


class Lru:
    """At most `budget` entries, or (with `weigh`) entries of at most `budget` in all (the
    last one kept whatever it weighs)."""

    def __init__(self, budget: int, weigh: Callable[[Any], int] | None = None) -> None:
        self.budget, self.weigh = budget, weigh
        self.items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value kept for `key` (now the most recently used), else `default`."""
        with self._lock:
            if key not in self.items:
                return default
            self.items.move_to_end(key)
            return self.items[key]

    def put(self, key: Hashable, value: Any) -> Any:
        """Keep `value` for `key`, dropping the least recently used past the budget; returns it."""
        with self._lock:
            self.items[key] = value
            self.items.move_to_end(key)
            weigh = self.weigh or (lambda _: 1)
            total = len(self.items) if self.weigh is None else sum(map(weigh, self.items.values()))
            while total > self.budget and len(self.items) > 1:
                total -= weigh(self.items.popitem(last=False)[1])
        return value

    def clear(self) -> None:
        with self._lock:
            self.items.clear()


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
