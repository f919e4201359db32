"""Deterministic text of lowered-op field values and IR types, in the VISA spelling (visa/visa.lark).

Records declare their form with a `TEXT_STYLE` class constant: `"struct"` prints
`{name=value, ...}`, `"tuple"` prints `(a, b, ...)`, `"entry"` prints `a:b:c` (a loop entry).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from ir.dtypes import DType
from ir.mapping.nodes import Mapping, Pair
from ir.mapping.ops import Entry
from ir.types import CStreamType, DmType, HbmType, SpmType, StreamType, TrfType, VrfType
from ir.memo import memo

__all__ = ["value_text", "mapping_text", "type_text"]


@memo(4096)
def mapping_text(mapping: Mapping) -> str:
    """A mapping's display text without the parentheses of a top-level pair (`M / 32, N / 32`)."""
    if isinstance(mapping, Pair):
        return ", ".join(item.text() for item in mapping.flatten())
    return mapping.text()


def _q(mapping: Mapping) -> str:
    return f'"{mapping_text(mapping)}"'


def type_text(t: Any, *, spatial: bool = False) -> str:
    """`hbm[D, "Chip", "Element"]`, `dm[D, "Chip", "Cluster", "Slice", "Element"]`; inside a
    program `stream[D, "Time", "Packet"]`, `trf[D, "Lane", "Element"]` and
    `cstream[Acc, D, "Lane", "Time", "Packet"]` (spatial mappings too when `spatial`)."""
    return _type_text(t, spatial)


@memo(4096)
def _type_text(t: Any, spatial: bool) -> str:
    """Every level mapping of the type (`levels()`, outer to inner) after its dtype (a cstream's
    accumulator first); the Chip, Cluster and Slice of a program's types only when `spatial`."""
    if t is None:
        return "none"
    if getattr(t, "kind", None) == "scalar":  # a runtime scalar (docs/runtime.md)
        return f"scalar[{t.dtype}]"
    if not isinstance(t, (HbmType, SpmType, DmType, StreamType, TrfType, VrfType, CStreamType)):
        return str(t)
    levels = t.levels() if spatial or t.kind in ("hbm", "spm", "dm") else t.levels()[3:]
    head = f"{t.acc}, {t.dtype}" if t.kind == "cstream" else f"{t.dtype}"
    return f"{t.kind}[{head}, {', '.join(_q(x) for x in levels)}]"


def value_text(v: Any) -> str:
    """The VISA text of one field value (ints, refs, enums, dtypes, mappings, lists, records)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)) and not isinstance(v, enum.Enum):
        return str(v) if isinstance(v, int) else f'"{v}"'
    if isinstance(v, DType):
        return str(v)
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, Mapping):
        return _q(v)
    if isinstance(v, Entry):
        return f"{v.size}:{v.stride}"
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(value_text(x) for x in v) + "]"
    style = getattr(type(v), "TEXT_STYLE", None)
    if style is None or not attrs.has(type(v)):
        return str(v)
    if getattr(type(v), "TEXT_MEMO", False):
        return _remembered_record_text(v, tuple(type(getattr(v, f.name)) for f in attrs.fields(type(v))))
    return _record_text(v, style)


@memo(1024)
def _remembered_record_text(v: Any, field_types: tuple[type, ...]) -> str:
    """The text of a record whose class declares `TEXT_MEMO` (its fields hold ints, not bools,
    below the top level, so equal records print alike), by its value and its field types."""
    return _record_text(v, type(v).TEXT_STYLE)


def _record_text(v: Any, style: str) -> str:
    items = [(f.name, getattr(v, f.name)) for f in attrs.fields(type(v))
             if not (f.metadata.get("omit_default") and getattr(v, f.name) == f.default)]  # optional: printed when set
    if style == "struct":
        return "{" + ", ".join(f"{k}={value_text(x)}" for k, x in items) + "}"
    if style == "tuple":
        return "(" + ", ".join(value_text(x) for _, x in items) + ")"
    if style == "entry":
        return ":".join(value_text(x) for _, x in items)
    return str(v)

