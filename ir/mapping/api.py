"""The user-facing constructors `m(...)` and `idx(...)` (docs/mapping-language.md).

Symbols resolve against the explicit `axes=` first, then the calling module's registry;
escapes against keyword arguments first, then the caller's locals and globals.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ir.errors import MappingError
from ir.mapping.axes import caller_frame, normalize_axes, registry_of
from ir.mapping.cells import Cell, finalize, walk
from ir.mapping.nodes import Mapping, Symbol
from ir.mapping.parser import MISSING, parse_index_items, parse_mapping

__all__ = ["m", "idx", "index_cell"]


def _resolver(escapes: dict[str, Any], frame_locals: dict[str, Any], frame_globals: dict[str, Any]):
    """Escape lookup: keywords, then the caller's locals, then its globals; dotted names too."""

    def lookup(name: str) -> Any:
        head, *rest = name.split(".")
        value = MISSING
        for scope in (escapes, frame_locals, frame_globals):
            if head in scope:
                value = scope[head]
                break
        for attr in rest:
            if value is MISSING:
                break
            value = getattr(value, attr, MISSING)
        return value

    return lookup


def _axis_table(axes: Any, frame_globals: dict[str, Any]) -> dict[str, int]:
    return {**registry_of(frame_globals), **normalize_axes(axes)}


@functools.lru_cache(maxsize=8192)
def _cached(text: str, axes_items: tuple[tuple[str, int], ...]) -> Mapping:
    return parse_mapping(text, dict(axes_items))


def m(text: str, axes: Any = None, **escapes: Any) -> Mapping:
    """Parse a mapping expression, e.g. `m("A / 8 # 256, A % 8")`.

    Raises MappingError with `.category` and a 1-based `.column` for any bad text."""
    if isinstance(text, Mapping):
        return text
    if not isinstance(text, str):
        raise MappingError("syntax", f"m() takes a mapping text, not {type(text).__name__}")
    frame = caller_frame()
    table = _axis_table(axes, frame.f_globals)
    if "{" not in text:
        return _cached(text, tuple(sorted(table.items())))
    env = _resolver(escapes, frame.f_locals, frame.f_globals)
    return parse_mapping(text, table, env)


def index_cell(items: list[tuple[Mapping, int]]) -> Cell:
    """The cell of an index literal given as `(mapping, value)` assignments (docs/mapping-language.md)."""
    contributions: list[tuple] = []
    one = np.ones(1, dtype=bool)
    for mapping, value in items:
        if value >= mapping.size and not isinstance(mapping, Symbol):
            contributions.append(("hole", 4, one))  # OutOfBounds decides, in order
            continue
        dtype = object if value >= 2**62 or mapping.size >= 2**62 else np.int64
        contributions.extend(walk(mapping, np.array([value], dtype=dtype), one))
    return finalize(contributions, 1, object)[0]


def idx(text: str, axes: Any = None, **escapes: Any) -> Cell:
    """Evaluate an index literal, e.g. `idx("A / 32 = 8: 3, B: 10")` -> Index / Padding / OutOfBounds."""
    if not isinstance(text, str):
        raise MappingError("syntax", f"idx() takes an index text, not {type(text).__name__}")
    frame = caller_frame()
    table = _axis_table(axes, frame.f_globals)
    env = _resolver(escapes, frame.f_locals, frame.f_globals)
    return index_cell(parse_index_items(text, table, env))
