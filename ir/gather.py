"""Gathers with indices held in a tensor (docs/machine/dma.md "Gather"): what an index selects.

`table.dma_gather_scaled(index, DmTensor[...])` and `dma_gather_unscaled` read rows of an
HBM table into DM at the rows an i32 index tensor names. The output's axes are the table
axes it keeps and the *index axes* (every axis of the index tensor); the table axes left
over are the *key*, one axis or several consecutive ones (the key region), whose positions
the index values select. The table reads as `outer, key, payload`: the *payload* is the
axes after the key (one contiguous row), the *outer* axes those before it (none when the
key is the outermost axis): `out[o, r, p] = table[o, key = index[r], p]`. A scaled index
holds byte offsets (position `k` is `k * row_bytes`, the stride between key positions), an
unscaled one raw positions.

The gathered rows form a *virtual source*: an HBM tensor of the table's chip whose element
is the outer axes, the index axes, then the payload, in the table's order. The gather moves
it into the DM output exactly as a `to_dm` would, so the DMA rules apply to it (GATHER-4),
and the lowering emits that DMA's commands.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.dtypes import DType
from ir.errors import RunTimeRefusal
from ir.mapping.factors import AxisFactor
from ir.mapping.nodes import Mapping, Symbol, pair_all
from ir.types import DmType, HbmType
import numpy as np

__all__ = ["GatherShape", "RegionRows", "gather_shape", "index_terms", "index_scratch", "virtual_source", "cells", "plain_table", "read_digits", "SPM_INDEX_BYTES", "GatherIndexError",
           "index_fault", "is_index_dtype"]

# The unscaled index list is read from the SPM of one processing element: at most 4 KiB
# of i32 entries per (chip, cluster) (the reference's per-PE budget).
SPM_INDEX_BYTES = 4096


class RegionRows:
    """What a gather and a scatter share: a tensor read as `outer, region, payload`, some of
    whose axes may be read as two digits (`splits`). Subclasses hold `outer`, `payload` and
    `splits` as fields."""

    outer: tuple[tuple[str, int], ...]
    payload: tuple[tuple[str, int], ...]
    splits: tuple[tuple[str, int, int], ...]

    def term(self, label: str, size: int) -> Mapping:
        """The mapping term of one label of the tensor read with `splits`: a digit `A / lo`
        or `A % lo` of a split axis, else the whole axis `label`."""
        for axis, n, lo in self.splits:
            for term in (Symbol(axis, n).stride(lo), Symbol(axis, n).modulo(lo)):
                if term.text() == label:
                    return term
        return Symbol(label, size)

    @property
    def outer_count(self) -> int:
        """Row copies per index value: one per position of the axes outside the region."""
        return cells(self.outer)

    @property
    def row_cells(self) -> int:
        return cells(self.payload)


@attrs.frozen
class GatherShape(RegionRows):
    """The key the index selects, the payload rows carry, the index's own axes and the table
    axes outside the key region."""

    key: str
    rows: int
    payload: tuple[tuple[str, int], ...]
    index: tuple[tuple[str, int], ...]
    terms: tuple[Mapping, ...] = ()   # the index's digits (`index_terms`), one per entry of `index`
    outer: tuple[tuple[str, int], ...] = ()    # table axes before the key region: one row per position
    region: tuple[tuple[str, int], ...] = ()   # the key's axes (one, or several consecutive), `rows` positions
    splits: tuple[tuple[str, int, int], ...] = ()   # (axis, size, low digit): a table axis read as two digits

    def row_bytes(self, bits: int) -> int | None:
        """Bytes of one gathered row, or None when not whole bytes."""
        total = self.row_cells * bits
        return None if total % 8 else total // 8

    @property
    def index_count(self) -> int:
        return cells(self.index)


def cells(axes: tuple[tuple[str, int], ...]) -> int:
    """The number of cells of a list of (axis, size)."""
    return math.prod(size for _, size in axes)


def read_digits(axes: tuple[tuple[str, int], ...], held: tuple[Mapping, ...], code: str) -> Any:
    """The tensor's whole `axes` as the digits another tensor (`held`: its levels) keeps of
    them: an axis it holds only the high or low digit of (`K % 2` of K) reads as two digits,
    `K / 2, K % 2`. Returns (labels (label, size), splits (axis, size, low digit), held
    labels) or the `code` violation of a digit that is neither the high nor the low one."""
    found: dict[str, set[tuple[int, int]]] = {}
    for mapping in held:
        for f in mapping.factors():
            if isinstance(f, AxisFactor):
                found.setdefault(f.axis, set()).add((f.step, f.extent))
    labels, splits, kept = [], [], set()
    for a, n in axes:
        term = _digit_term(a, n, found[a]) if a in found else Symbol(a, n)
        if term is not None and term.size == n:
            labels.append((a, n))
            kept |= {a} & found.keys()
            continue
        step = 0 if term is None else _step(term)
        lo = term.size if step == 1 else step if term is not None and step * term.size == n else 0
        if not lo or n % lo:
            return Violation(code, f"the digits of {a} held besides the index are not its high or its low digit: "
                                   "the index selects one digit of an axis, the rest of the axis rides in the row",
                             help=f"keep `{a} % k` (the index selects `{a} / k`) or `{a} / k` (it selects `{a} % k`)")
        labels += [(Symbol(a, n).stride(lo).text(), n // lo), (Symbol(a, n).modulo(lo).text(), lo)]
        splits.append((a, n, lo))
        kept.add(term.text())
    return tuple(labels), tuple(splits), kept


def _step(term: Mapping) -> int:
    return next(f.step for f in term.factors() if isinstance(f, AxisFactor))


def _whole_axes(mapping: Mapping) -> tuple[tuple[str, int], ...] | None:
    """The axes of a mapping of whole axes and `1`s, in order; None for anything else."""
    out = []
    for f in mapping.factors():
        if not (isinstance(f, AxisFactor) and f.step == 1 and f.extent == f.axis_size):
            return None
        out.append((f.axis, f.axis_size))
    return tuple(out) if len({a for a, _ in out}) == len(out) else None


def index_terms(t: HbmType | DmType) -> tuple[Mapping | None, ...]:
    """The index tensor's digits in its logical order: axes by first appearance reading
    Cluster, Slice (an SPM index: Pe), Element outer to inner (an HBM index: its element's order), each axis
    as the one digit range its cells cover (the whole axis unless the index holds a tile;
    None for an axis whose digits leave gaps)."""
    levels = (t.element,) if isinstance(t, HbmType) else tuple(t.levels()[1:])   # DM: Cluster, Slice, Element
    digits: dict[str, set[tuple[int, int]]] = {}
    sizes: dict[str, int] = {}
    for mapping in levels:
        for f in mapping.factors():
            if isinstance(f, AxisFactor):
                digits.setdefault(f.axis, set()).add((f.step, f.extent))
                sizes[f.axis] = f.axis_size
    return tuple(_digit_term(a, sizes[a], found) for a, found in digits.items())


def _digit_term(axis: str, size: int, found: set[tuple[int, int]]) -> Mapping | None:
    """One axis's digits (step, extent) merged into a mapping term, or None when they do not
    form one contiguous digit range (GATHER-3)."""
    step, extent = max(found)
    for s, e in sorted(found, reverse=True)[1:]:
        if s * e != step:
            return None
        step, extent = s, extent * e
    extent = min(extent, -(-size // step))
    if size % step:
        return None
    term = Symbol(axis, size).stride(step) if step > 1 else Symbol(axis, size)
    if extent < term.size:
        term = term.modulo(extent) if term.size % extent == 0 else term.resize(extent)
    return term


def gather_shape(table: HbmType, index: HbmType | DmType, out: DmType) -> GatherShape | Violation:
    """The key, payload and index axes of a gather, or its GATHER-3 violation."""
    table_axes = _whole_axes(table.element)
    if table_axes is None:
        return Violation("GATHER-3", f"the table's element `{table.element}` must list whole axes",
                         help="gather from an HBM tensor whose element is whole axes, e.g. m(\"K, D\")")
    if isinstance(index, HbmType) and _whole_axes(index.element) is None:
        return Violation("GATHER-3", f"a scaled index's element `{index.element}` must list whole axes")
    terms = index_terms(index)
    if None in terms:
        return Violation("GATHER-3", f"the index's digits of an axis leave gaps (`{index.element}`): an index "
                                     "holds whole axes or one contiguous digit range of each",
                         help="copy the index into DM as one tile of each axis")
    idx = tuple((term.text(), term.size) for term in terms)
    idx_names = {a for term in terms for a in term.axes()}
    out_names = set(out.element.axes() | out.slice.axes() | out.cluster.axes())
    payload_names = out_names - idx_names
    missing = sorted(payload_names - {a for a, _ in table_axes})
    if missing:
        return Violation("GATHER-3", f"output axis {missing[0]} is neither an index axis nor an axis of the table",
                         label=f"index axes: {', '.join(sorted(idx_names)) or 'none'}")
    read = read_digits(table_axes, (out.cluster, out.slice, out.element), "GATHER-3")
    if isinstance(read, Violation):
        return read
    table_axes, splits, kept = read
    # An index axis named like a table axis stands in the output for the index (the table
    # axis of that name is the key it selects), not for a table axis the rows keep.
    payload_names = (payload_names - {a for a, _, _ in splits}) | (kept - idx_names)
    names = [a for a, _ in table_axes]
    keys = [a for a in names if a not in payload_names]
    if not keys:
        return Violation("GATHER-3", "no table axis is left for the index to select: the output keeps every table "
                                     "axis, and the index's axes take the place of the selected ones",
                         help="drop the selected (key) axis from the output; the index's axes take its place")
    first = names.index(keys[0])
    if names[first:first + len(keys)] != keys:
        return Violation("GATHER-3", f"the table axes the index selects ({', '.join(keys)}) are not consecutive in "
                                     f"`{table.element}`: an index value names one position of one consecutive "
                                     "region of the table's axes",
                         help="keep every other table axis in the output, or store the selected axes side by side")
    region = table_axes[first:first + len(keys)]
    payload = table_axes[first + len(keys):]
    return GatherShape(", ".join(keys), cells(region), payload, idx, terms, outer=table_axes[:first], region=region,
                       splits=splits)


def index_scratch(index_t: Any) -> HbmType:
    """The index in its logical order, as the HBM tensor an unscaled gather reads it into."""
    return HbmType(index_t.dtype, index_t.chip, pair_all(list(index_terms(index_t))))


def virtual_source(table: HbmType, shape: GatherShape) -> HbmType:
    """The gathered rows as an HBM tensor on the table's chip: the table's axes outside the key
    region (`shape.outer`), then the index axes, then the payload (each row's contiguous bytes)."""
    names = [shape.term(a, n) for a, n in shape.outer] + list(shape.terms) + [shape.term(a, n) for a, n in shape.payload]
    return HbmType(table.dtype, table.chip, pair_all(names))


def plain_table(t: HbmType, shape: Any) -> HbmType:
    """The table (a scatter's output) in its logical order `outer, region, payload`, each
    split axis read as its two digits."""
    terms = [shape.term(a, n) for a, n in shape.outer + shape.region + shape.payload]
    return HbmType(t.dtype, t.chip, pair_all(terms))


def is_index_dtype(dtype: DType) -> bool:
    return dtype == DType.I32


class GatherIndexError(RunTimeRefusal):
    """GATHER-6 / SCATTER-6: an index value selects no row of the table or the output (raised
    at run time by the cpu backend and the VISA interpreter, with the offending index)."""

    def __init__(self, message: str, code: str = "GATHER-6") -> None:
        super().__init__(message, code=code)


def index_fault(values: Any, scaled: bool, row_bytes: int, rows: int, key: str,
                index: tuple[tuple[str, int], ...], chip: int, what: str = "gather") -> GatherIndexError | None:
    """The error for the first bad value of one chip's index (in the index's logical order),
    or None. A scaled value is a byte offset, a multiple of `row_bytes` below `rows * row_bytes`;
    an unscaled one a row number below `rows`."""
    v = np.asarray(values, np.int64).reshape(-1)
    bad = (v < 0) | ((v % row_bytes != 0) | (v // row_bytes >= rows) if scaled else v >= rows)
    if not bad.any():
        return None
    r = int(np.argmax(bad))
    coords = np.unravel_index(r, [n for _, n in index]) if index else ()
    where = ", ".join(f"{a}={int(c)}" for (a, _), c in zip(index, coords))
    value = int(v[r])
    if scaled and value >= 0 and value % row_bytes:
        why = f"is not a multiple of the {row_bytes}-byte row"
    else:
        row = value // row_bytes if scaled else value
        table = "table" if what == "gather" else "output"
        why = f"selects row {row} of {key}, but the {table} has {rows} rows (0..{rows - 1})"
    kind = "byte offset" if scaled else "row number"
    return GatherIndexError(f"{what} index [{where}] on chip {chip} holds {kind} {value}, which {why}",
                            code="GATHER-6" if what == "gather" else "SCATTER-6")
