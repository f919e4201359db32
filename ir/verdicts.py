"""The [T] verdicts of traced ops, remembered by everything their rules read.

An op's rules (`Op.RULES`) are functions of the op's fields and of the constants of the
target checked against (ir/machine.py), so two ops with the same class and fields, the
values they name aside, checked against the same constants, get the same verdict: a tile loop's calls are
checked once per distinct call (ir/memo.py's MemoTable; off inside `memos_disabled`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ir.machine import constants
from ir.memo import MemoTable

__all__ = ["rule_key", "remembered_verdict"]

_VERDICTS = MemoTable(8192)
_KEY_FIELDS: dict[type, tuple[str, ...]] = {}


def rule_key(op: Any, value_type: type) -> tuple:
    """Everything an op's rules can read: its class and every field but its location (facts
    included), each value (an instance of `value_type`) replaced by its type and the order in
    which the op first names it (so which operands are the same value still shows, never the
    value numbers)."""
    cls = type(op)
    names = _KEY_FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in attrs.fields(cls) if f.metadata.get("role") != "loc")
        _KEY_FIELDS[cls] = names
    seen: dict[int, int] = {}

    def norm(v: Any) -> Any:
        if isinstance(v, value_type):
            return ("%", seen.setdefault(v.id, len(seen)), v.type)
        if isinstance(v, tuple):
            return tuple(norm(x) for x in v)
        return v

    return (cls, *(norm(getattr(op, n)) for n in names))


def remembered_verdict(op: Any, value_type: type, compute: Callable[[], Any]) -> Any:
    """`compute()` (the op's first broken rule, or None), remembered by `rule_key`."""
    return _VERDICTS.get((constants(), *rule_key(op, value_type)), compute)
