"""Memoised pure functions of the compile path (trace rules, lowering, printing) and one
switch over all of them.

A memo is an `functools.lru_cache` whose key is every argument of the function: each one
immutable and compared by value (types, mappings with their axis sizes, the target), so
an entry is only ever reused for the same inputs, whichever kernel or tile asks. A tile
loop asks the same questions once per tile; the memo answers all but the first.
`clear_memos()` forgets every entry (what a fresh process has: the benchmarks' "cold"),
and inside `memos_disabled()` every memoised function computes afresh (the tests compare
the two).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["memo", "MemoTable", "clear_memos", "memos_disabled"]

_CACHES: list[Any] = []
_OFF = [False]


def memo(maxsize: int = 1024) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Memoise a pure function of hashable, immutable arguments (`lru_cache(maxsize)`),
    registered for `clear_memos` and `memos_disabled`."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if _OFF[0]:
                return fn(*args, **kwargs)
            return cached(*args, **kwargs)

        _CACHES.append(cached)
        return call

    return wrap


class MemoTable:
    """Answers by a key the caller builds from every input of `compute` (for a computation
    whose inputs are not its arguments, e.g. an op's rules, keyed on its fields): at most
    `maxsize` entries (then it starts over); an unhashable key is computed, not stored."""

    def __init__(self, maxsize: int = 4096) -> None:
        self.maxsize = maxsize
        self._answers: dict[Any, Any] = {}
        _CACHES.append(self)

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        if _OFF[0]:
            return compute()
        try:
            return self._answers[key]
        except KeyError:
            pass
        except TypeError:  # a field without a value hash (a list, an array): no memo
            return compute()
        out = compute()
        if len(self._answers) >= self.maxsize:
            self._answers.clear()
        self._answers[key] = out
        return out

    def cache_clear(self) -> None:
        self._answers.clear()


def clear_memos() -> None:
    """Forget every memoised answer."""
    for cached in _CACHES:
        cached.cache_clear()


@contextlib.contextmanager
def memos_disabled() -> Iterator[None]:
    """Compute every memoised function afresh inside the block (not thread-safe: tests only)."""
    old = _OFF[0]
    _OFF[0] = True
    try:
        yield
    finally:
        _OFF[0] = old
