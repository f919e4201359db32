"""Per-record memo: what a record's own fields determine, computed once per parsed record.

Records are frozen, so anything derived from a record alone (and from a target, or a few
plain numbers) is the same every time the record runs: a read plan's index table, a write
plan's addresses, a contraction plan, a program's live rows. The plain interpreter marks
such a function `per_record` (visa/interp/shortcuts.py); with the switch on, this shortcut
caches it on the identity of its arguments (the entry keeps them alive, so an id is never
reused while its entry exists) in a bounded table shared by all memoised functions.
Cached arrays are made read-only: a caller that needs to write makes its own copy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from visa.interp.shortcuts import frozen, per_record, register

__all__ = ["per_record", "clear", "remembered"]

_LIMIT = 2048
_PLAIN = (int, str, bool)
_TABLE: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}


@register("per_record")
def remembered(name: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """`fn(*args)` (the function `name`), remembered on the identity of `args` (plain ints
    and strings by value)."""
    key = (name, *[a if type(a) in _PLAIN else id(a) for a in args])
    hit = _TABLE.get(key)
    if hit is not None and hit[0] == args:  # element by element, identity first (as `is` or `==`)
        return hit[1]
    value = frozen(fn(*args))
    if len(_TABLE) >= _LIMIT:  # the oldest entry; another thread may have just dropped it
        _TABLE.pop(next(iter(_TABLE), None), None)
    _TABLE[key] = (args, value)
    return value


def clear() -> None:
    """Forget every memoised value."""
    _TABLE.clear()
