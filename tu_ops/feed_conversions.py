"""The Fetch Adapter conversions of a `feed_buffer` record, step by step (FEED-1)."""

from __future__ import annotations

from typing import Any

from ir.dtypes import DType
from tu_ops.enums import Conversion, ConversionKind
from ir.words import a_an

__all__ = ["conversion_step", "conversions_text"]


def conversion_step(target: Any, c: Conversion, d: DType) -> tuple[str | None, DType]:
    """One FEED-1 step from dtype `d`: (problem, dtype after the conversion)."""
    if c.kind is ConversionKind.ZP_SUB:
        entry = target.zero_point_entry(d)
        if entry is None:
            return f"no zero-point subtraction from {d}", d
        if not entry.native:
            return f"zero-point subtraction {d} -> {entry.dst} is not native on {target.name}", d
        if not entry.min <= c.zero_point <= entry.max:
            return f"zero point {c.zero_point} outside [{entry.min}, {entry.max}] for {d}", d
        return None, entry.dst
    src, dst = c.kind.pair
    if src != d:
        return f"{c} converts {src}, but the adapter holds {d} at that point", d
    entry = target.table_lookup(src, dst) if c.kind.stage == "lookup" else target.fetch_cast_entry(src, dst)
    if entry is None:
        return f"{c} is not {a_an(c.kind.stage)} of target {target.name}", d
    if not entry.native:
        return f"{c} is not native on {target.name}", d
    return None, dst


def conversions_text(conversions: tuple[Conversion, ...]) -> str:
    return "[" + ", ".join(str(c) for c in conversions) + "]"
