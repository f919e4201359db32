"""`Lru`: values kept by key, the least recently used dropped past a budget (a count of
entries, or their weight: the bytes of a move plan's index arrays). Runs may come from
several threads at once: every access holds the map's lock."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["MISSING", "Lru"]

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
