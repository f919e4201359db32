"""The mapping explainer behind `npu-opt explain-mapping`: size, cells, normal form."""

from __future__ import annotations

from typing import Any

from ir.mapping.cells import LIVE, OOB, OVERSHOOT, CellTable
from ir.mapping.nodes import Mapping, PaddingKind

__all__ = ["explain", "render_text", "cell_text", "one_line"]


def cell_text(table: CellTable, i: int) -> str:
    """One cell of a table as text: `{A: 3, B: 1}`, `{}`, `pad:top`, `oob`, `overshoot`."""
    status = int(table.status[i])
    if status == LIVE:
        coords = {k: int(v[i]) for k, v in sorted(table.coords.items()) if int(v[i])}
        return "{" + ", ".join(f"{k}: {v}" for k, v in coords.items()) + "}"
    if status == OOB:
        return "oob"
    if status == OVERSHOOT:
        return "overshoot"
    return f"pad:{PaddingKind(status).label}"


def _positions(size: int, rows: int) -> list[int]:
    if size <= 2 * rows:
        return list(range(size))
    return list(range(rows)) + list(range(size - rows, size))


def explain(mapping: Mapping, rows: int = 8) -> dict[str, Any]:
    """A JSON-ready description: expression, size, sample cells, factors, normal form."""
    positions = _positions(mapping.size, rows)
    table = mapping.cells(positions)
    out: dict[str, Any] = {
        "expression": str(mapping),
        "size": mapping.size,
        "axes": sorted(mapping.axes()),
        "cells": [[p, cell_text(table, i)] for i, p in enumerate(positions)],
        "elided": max(0, mapping.size - len(positions)),
    }
    try:
        out["factors"] = [str(f) for f in mapping.factors()]
        out["normalized"] = str(mapping.normalize())
    except Exception as e:  # an overshooting mapping has no factor form (docs/mapping-language.md step 6)
        if type(e).__name__ != "OvershootError":
            raise
        out["factors"] = None
        out["normalized"] = None
        out["note"] = "some positions overshoot their axes, so the mapping has no normal form"
    return out


def render_text(info: dict[str, Any]) -> str:
    """Human-readable rendering of `explain()`."""
    cells = info["cells"]
    half = len(cells) // 2 if info["elided"] else len(cells)
    width = max([len("position")] + [len(str(p)) for p, _ in cells])
    lines = [f"mapping     {info['expression']}", f"size        {info['size']}",
             f"axes        {', '.join(info['axes']) or '(none)'}", "", f"  {'position':>{width}}  cell"]
    for k, (p, c) in enumerate(cells):
        if info["elided"] and k == half:
            lines.append(f"  {'...':>{width}}  ({info['elided']} positions not shown)")
        lines.append(f"  {p:>{width}}  {c}")
    lines.append("")
    if info["factors"] is None:
        lines.append(f"note        {info['note']}")
    else:
        lines.append(f"factors     {' '.join(info['factors']) or '(identity)'}")
        lines.append(f"normalized  {info['normalized']}")
    return "\n".join(lines)


def one_line(info: dict[str, Any]) -> str:
    """`explain()` in one line: size, axes and the normal form (or why there is none)."""
    axes = ", ".join(info["axes"]) or "no axis"
    tail = f"normalized {info['normalized']}" if info["factors"] is not None else info["note"]
    factors = f"; factors {' '.join(info['factors']) or '(identity)'}" if info["factors"] is not None else ""
    return f"{info['expression']}: size {info['size']}, axes {axes}{factors}; {tail}"
