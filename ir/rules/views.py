"""Trace-time rules of views (docs/views.md): tiles (VIEW-1 ... VIEW-3), pads (VIEW-6, VIEW-7)
and reshapes (VIEW-5).

A tile of one level mapping `E` by an index mapping `I` (one digit range of one axis,
padding around it ignored) of length `LEN` at `start` is the mapping `E` with that digit
replaced by its first `LEN` values padded back to the digit's extent, with padding of the
view's kind (`#` for a read view, `#{!}` for a write view). The requested mapping must be
equivalent to it; the window starts at the cell of `I` at position `start`, whose
position in `E` is the level's cell offset.

An index over an axis padded inline (`X # P / d`, the reference's `padded_axis_tile`) names
a digit of the padded term: the term `X # P` is read as one axis of P values wherever it
stands in the level, the index and the tile's mapping (`_padded_as_axis`), so the index steps
over all P / d chunks, the last live one and chunks of padding included.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.diagnostic import Violation
from ir.errors import MappingError
from ir.mapping.factors import AxisFactor, PaddingFactor, RaggedFactor, canon, factor_mapping
from ir.mapping.nodes import Mapping, Pad, PaddingKind, Symbol, pair_all, tree_nodes, written
from ir.mapping.ops import strides

__all__ = ["tile_offset", "tile_extent", "check_pad", "check_reshape", "fill_pattern"]


def _digit(index: Mapping) -> AxisFactor | None:
    """The one digit range an index mapping names (padding factors around it ignored)."""
    live = [f for f in index.factors() if not isinstance(f, PaddingFactor)]
    if len(live) != 1 or not isinstance(live[0], AxisFactor):
        return None
    return live[0]


def _padded_terms(index: Mapping) -> set[Pad]:
    """The terms `X # P` (an axis padded inline, any padding kind) of an index mapping."""
    return {node for node in tree_nodes(index) if isinstance(node, Pad) and isinstance(node.operand, Symbol)}


def _substitute(mapping: Mapping, table: dict[tuple[str, int], Symbol]) -> Mapping:
    """`mapping` with every term `X # P` named in `table` (by axis and padded size, any kind)
    replaced by its axis of P values."""
    if isinstance(mapping, Pad) and isinstance(mapping.operand, Symbol):
        key = (mapping.operand.name, mapping.n)
        if key in table:
            return table[key]
    kids = mapping.children()
    if not kids:
        return mapping
    new = tuple(_substitute(k, table) for k in kids)
    if new == kids:
        return mapping
    return attrs.evolve(mapping, **dict(zip(_operand_names(mapping), new)))


def _operand_names(mapping: Mapping) -> tuple[str, ...]:
    return ("left", "right") if len(mapping.children()) == 2 else ("operand",)


def _padded_as_axis(index: Mapping, *mappings: Mapping) -> tuple[Mapping, ...] | None:
    """(index, *mappings) with the inline-padded terms of `index` read as axes of their padded
    size (named `X#P`, a name no declared axis has); None when the index has none."""
    terms = _padded_terms(index)
    if not terms:
        return None
    table = {(t.operand.name, t.n): Symbol(f"{t.operand.name}#{t.n}", t.n) for t in terms}
    return tuple(_substitute(x, table) for x in (index, *mappings))


def _split(factors: list, d: AxisFactor) -> tuple[list, int] | None:
    """`factors` with the factor holding digit range `d` split so that `d` is one factor of
    its own; (new list, position of `d`) or None when no factor holds it evenly."""
    lo, hi = d.step, d.step * d.extent
    for i, f in enumerate(factors):
        if not isinstance(f, AxisFactor) or f.axis != d.axis:
            continue
        f_lo, f_hi = f.step, f.step * f.extent
        if not (f_lo <= lo and hi <= f_hi and lo % f_lo == 0 and f_hi % hi == 0):
            continue
        parts = []
        if f_hi // hi > 1:
            parts.append(AxisFactor(d.axis, hi, f_hi // hi, f.axis_size))
        mid = len(parts)
        parts.append(AxisFactor(d.axis, lo, d.extent, f.axis_size))
        if lo // f_lo > 1:
            parts.append(AxisFactor(d.axis, f_lo, lo // f_lo, f.axis_size))
        return factors[:i] + parts + factors[i + 1:], i + mid
    return None


def _render(f: object) -> Mapping:
    """A factor as a mapping; a ragged piece has none (its cells are no mapping of their own)."""
    if isinstance(f, RaggedFactor):
        raise MappingError("ragged", "a ragged piece without its mapping")
    return factor_mapping(f)  # type: ignore[arg-type]


def _tiled(factors: list, at: int, digit: Any, length: int, writable: bool) -> Mapping:
    """The level of `factors` with the digit at `at` cut to a window of `length` of its values,
    padded back to its extent (bottom padding in a write view, top in a read view)."""
    kind = PaddingKind.BOTTOM if writable else PaddingKind.TOP
    window = _render(AxisFactor(digit.axis, digit.step, digit.extent, factors[at].axis_size))
    if length < digit.extent:
        window = window.resize(length).pad(digit.extent, kind) if length > 1 else \
            _render(PaddingFactor(kind, digit.extent))
    return pair_all([_render(f) for f in factors[:at]] + [window] + [_render(f) for f in factors[at + 1:]])


def _tiled_factors(factors: list, at: int, digit: Any, length: int, writable: bool) -> list | None:
    """`_tiled` as a factor list, keeping the level's ragged pieces as they are; None when
    the window itself has no factor form."""
    try:
        window = _tiled([factors[at]], 0, digit, length, writable).factors()
    except (MappingError, TypeError, ValueError):
        return None
    return canon(list(factors[:at]) + list(window) + list(factors[at + 1:]))


def _factors_equal(wanted: Mapping, factors: list) -> bool:
    try:
        return canon(list(wanted.factors())) == factors
    except MappingError:
        return False


def tile_extent(index: Mapping) -> int:
    """How many values the tile index names (its one digit range; 1 for a unit index)."""
    padded = _padded_as_axis(index)
    digit = _digit(index if padded is None else padded[0])
    return 1 if index.size == 1 or digit is None else digit.extent


def tile_offset(level: Mapping, index: Mapping, length: int, wanted: Mapping, start: object,
                writable: bool) -> int | Violation:
    """The cell offset of a tile of `level`, or the VIEW rule it breaks."""
    if not isinstance(start, int) or isinstance(start, bool):
        return Violation("VIEW-8", f"a tile start must be a Python int known while tracing, not "
                                   f"{type(start).__name__}",
                         help="compute it from Python loop variables: `for i in range(4): v.tile(..., i * 8)`")
    if index.size == 1:  # a unit index (an axis of size 1): the tile is the view itself
        return _unit_tile(level, index, length, wanted, start)
    digit = _digit(index)
    found = _split(list(level.factors()), digit) if digit is not None else None
    padded = _padded_as_axis(index, level, wanted) if found is None else None
    if padded is not None:  # `X # P / d`: a digit of the padded term read as an axis
        shown = (index, level, wanted)
        index, level, wanted = padded
        at = tile_offset(level, index, length, wanted, start, writable)
        if isinstance(at, Violation):  # name the user's mappings, not the substituted ones
            for mine, theirs in zip(padded, shown):
                at = attrs.evolve(at, message=at.message.replace(str(mine), str(theirs)),
                                  help=at.help and at.help.replace(str(mine), str(theirs)))
        return at
    if digit is None or found is None:
        return Violation("VIEW-1", f"the tile index `{index}` is not one digit range of the view `{level}`",
                         help="index by one axis or one digit of an axis the view holds whole, e.g. m(\"B\") "
                              "or m(\"B / 16\")")
    if not isinstance(length, int) or not 1 <= length <= digit.extent:
        return Violation("VIEW-3", f"a tile of length {length} does not fit the {digit.extent} values of `{index}`")
    if not 0 <= start or start + length > digit.extent:
        return Violation("VIEW-3", f"the tile [{start}, {start + length}) runs past the {digit.extent} values of "
                                   f"`{index}`",
                         help=f"keep start + length <= {digit.extent}")
    factors, at = found
    try:
        expected = _tiled(factors, at, digit, length, writable)
    except (MappingError, TypeError, ValueError):
        expected = None
    if expected is None:  # a ragged piece elsewhere (an earlier tile of another axis): compare factor forms
        same = _tiled_factors(factors, at, digit, length, writable)
        if same is None:
            return Violation("VIEW-1", f"the view `{level}` has a ragged piece the tile cannot be split around",
                             help="tile the view before the tile that made it ragged, or use lengths that divide")
        if wanted.size != level.size or not _factors_equal(wanted, same):
            return Violation("VIEW-2", f"the tile of `{level}` by `{index}` ({length} of {digit.extent}) is not "
                                       f"`{wanted}`",
                             help=f"write the view's mapping with `{index}` cut to its first {length} values and "
                                  f"padded back to {digit.extent}")
    elif not expected.equivalent(wanted):
        return Violation("VIEW-2", f"the tile of `{level}` by `{index}` ({length} of {digit.extent}) is "
                                   f"`{expected}`, not `{wanted}`",
                         help=f"write the tile's mapping as m(\"{written(expected)}\")"
                              + (" (a write view pads with #{!})" if writable else ""))
    return start * digit.step // factors[at].step * strides(factors)[at]


def _unit_tile(level: Mapping, index: Mapping, length: object, wanted: Mapping, start: int) -> int | Violation:
    if length != 1 or start != 0:
        return Violation("VIEW-3", f"the tile [{start}, {start}+{length}) runs past the 1 value of `{index}`")
    if not level.equivalent(wanted):
        return Violation("VIEW-2", f"a tile by the unit index `{index}` is the view `{level}` itself, "
                                   f"not `{wanted}`", help=f"write the tile's mapping as m(\"{written(level)}\")")
    return 0


def check_pad(level: Mapping, wanted: Mapping, unpad: bool) -> Violation | None:
    """VIEW-6 / VIEW-7: `wanted` is `level` under one outermost padding (the reverse for unpad)."""
    inner, outer = (wanted, level) if unpad else (level, wanted)
    if outer.size < inner.size:
        return Violation("VIEW-6", f"the padded view `{outer}` ({outer.size} cells) is narrower than `{inner}` "
                                   f"({inner.size} cells)")
    try:
        ok = inner.pad(outer.size).equivalent(outer)
    except MappingError:
        ok = False
    if not ok:
        return Violation("VIEW-7", f"padding `{inner}` to {outer.size} cells gives `{inner.pad(outer.size)}`, "
                                   f"not `{outer}`",
                         help="a pad adds cells after the view's last cell only: m(\"<view> # <extent>\")")
    return None


def check_reshape(names: tuple[str, ...], old: tuple[Mapping, ...], new: tuple[Mapping, ...]) -> Violation | None:
    """VIEW-5: every level keeps its size."""
    for name, a, b in zip(names, old, new):
        if a.size != b.size:
            return Violation("VIEW-5", f"reshape changes the size of the {name} level from {a.size} to {b.size}",
                             help="a reshape relabels the same cells: every level keeps its number of cells")
    return None


def fill_pattern(value: float | int, dtype: object) -> int:
    """The bit pattern of one cell of `dtype` holding `value` (floats rounded to nearest even,
    integers as their two's complement in the dtype's width)."""
    with np.errstate(over="ignore"):
        cell = np.asarray(value, np.float64 if dtype.is_float else np.int64).astype(dtype.host_dtype)  # type: ignore
    return int(cell.view(dtype.bits_dtype))  # type: ignore[attr-defined]


def tile_window(level: Mapping, index: Mapping, length: int, writable: bool = False) -> tuple[Mapping, Mapping, int] | None:
    """(the tile's mapping, `level` with the tiled digit left out, cell offset of one step of
    the index) of a tile of `level` by the one digit range `index`; None when `index` is not
    one digit range the level holds evenly (VIEW-1's condition)."""
    digit = _digit(index)
    found = _split(list(level.factors()), digit) if digit is not None else None
    if digit is None or found is None:
        return None
    factors, at = found
    try:
        tiled = _tiled(factors, at, digit, length, writable)
        rest = pair_all([_render(f) for f in factors[:at] + factors[at + 1:]])
    except (MappingError, TypeError, ValueError):
        return None
    return tiled, rest, strides(factors)[at] // factors[at].step * digit.step
