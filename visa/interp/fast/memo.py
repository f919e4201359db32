"""Per-record memo: what a record's own fields determine, computed once per parsed record.

Records are frozen, so anything derived from a record alone (and from a target, or a few
plain numbers) is the same every time the record runs: a read plan's index table, a write
plan's addresses, a contraction plan, a program's live rows. `per_record` caches such a
function on the identity of its arguments (the entry keeps them alive, so an id is never
reused while its entry exists) in a bounded table shared by all memoised functions.
Cached arrays are made read-only: a caller that needs to write makes its own copy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from visa.interp.fast import speed

__all__ = ["per_record", "clear"]

F = TypeVar("F", bound=Callable[..., Any])
_LIMIT = 2048
_PLAIN = (int, str, bool)
_TABLE: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}


def _frozen(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    elif isinstance(value, tuple):
        for v in value:
            _frozen(v)
    return value


def per_record(fn: F) -> F:
    """Memoise `fn(*args)` on the identity of its arguments (plain ints and strings by value)."""
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def cached(*args: Any) -> Any:
        if not speed.on():      # the plain path: computed every time
            return _frozen(fn(*args))
        key = (name, *[a if type(a) in _PLAIN else id(a) for a in args])
        hit = _TABLE.get(key)
        if hit is not None and hit[0] == args:  # element by element, identity first (as `is` or `==`)
            return hit[1]
        value = _frozen(fn(*args))
        if len(_TABLE) >= _LIMIT:  # the oldest entry; another thread may have just dropped it
            _TABLE.pop(next(iter(_TABLE), None), None)
        _TABLE[key] = (args, value)
        return value

    return cached  # type: ignore[return-value]


def clear() -> None:
    """Forget every memoised value."""
    _TABLE.clear()
