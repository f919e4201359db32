"""The canonical factor form of a mapping (docs/mapping-language.md) and `normalize()`.

A mapping's cells factor into a list of prime pieces, outer to inner: `AxisFactor(X, s, e)` (a
digit range of one axis), `BroadcastFactor(e)` (broadcast), `PaddingFactor(k, e)` (pure padding) and `RaggedFactor` (a
ragged table). Two mappings are equivalent iff their sizes and factor lists are equal.
Factors are computed structurally (`ir.mapping.structural`), which tabulates only ragged
pieces; `factors_from_table` is the definition it is tested against.
"""

from __future__ import annotations

import functools
import math
from typing import Union

import attrs
import numpy as np

from ir.errors import MappingError, OvershootError
from ir.mapping.cells import LIVE, OVERSHOOT, Cell, CellTable, Index, Padding
from ir.mapping.nodes import (
    IDENTITY, Broadcast, Mapping, Modulo, Pad, PaddingKind, Resize, Stride, Symbol, axis_sizes, pair_all,
)

__all__ = [
    "AxisFactor", "BroadcastFactor", "PaddingFactor", "RaggedFactor", "Factor", "factors_of",
    "factors_from_table", "canon", "normalize",
    "factor_size", "table_matrix", "factor_mapping", "split_factor", "same_kind",
]



@attrs.frozen
class AxisFactor:
    """A digit range of axis X: cell d is {X: step * d} for d < extent."""

    axis: str
    step: int
    extent: int
    axis_size: int = attrs.field(eq=True)

    def __str__(self) -> str:
        return f"AxisFactor({self.axis},{self.step},{self.extent})"


@attrs.frozen
class BroadcastFactor:
    """A broadcast: `extent` cells that all hold the empty index."""

    extent: int

    def __str__(self) -> str:
        return f"BroadcastFactor({self.extent})"


@attrs.frozen
class PaddingFactor:
    """Pure padding: cell 0 is {} and the other extent - 1 cells are Padding(kind)."""

    kind: PaddingKind
    extent: int

    def __str__(self) -> str:
        return f"PaddingFactor({self.kind.label},{self.extent})"


class RaggedFactor:
    """A ragged piece that does not factor further, kept as its cell table.

    The table is held as an integer matrix (one row per cell: its status, then a coordinate
    per axis it uses), so a piece of a million cells is built, compared and hashed without
    a million Python objects; `cells` spells it out as Index / Padding objects on demand.
    `RaggedFactor(cells)` and `RaggedFactor.from_table(names, matrix)` make the same value."""

    __slots__ = ("_names", "_matrix", "_key", "_hash", "_cells")

    def __init__(self, cells: tuple[Cell, ...]) -> None:
        names = sorted({k for c in cells if isinstance(c, Index) for k in c})
        mat = np.zeros((len(cells), 1 + len(names)), dtype=np.int64)
        mat[:, 0] = LIVE
        for i, c in enumerate(cells):
            if isinstance(c, Index):
                for name, v in c.items():
                    mat[i, 1 + names.index(name)] = v
            else:
                mat[i, 0] = int(c.kind)
        self._set(names, mat)
        self._cells = tuple(cells)

    @classmethod
    def from_table(cls, names: list[str] | tuple[str, ...], matrix: np.ndarray) -> RaggedFactor:
        """The piece whose cells are the rows of `matrix` (status, coordinate per name)."""
        out = cls.__new__(cls)
        out._set(list(names), np.asarray(matrix, dtype=np.int64))
        out._cells = None
        return out

    def _set(self, names: list[str], mat: np.ndarray) -> None:
        mat = mat.copy()
        mat[mat[:, 0] != LIVE, 1:] = 0  # a padding cell has no coordinates
        used = [j for j in range(len(names)) if mat[:, j + 1].any()]  # canonical: only axes it uses
        self._names = tuple(names[j] for j in used)
        self._matrix = mat[:, [0] + [j + 1 for j in used]]
        self._matrix.flags.writeable = False
        self._key = (self._names, self._matrix.shape, self._matrix.tobytes())
        self._hash = hash(self._key)

    @property
    def extent(self) -> int:
        return len(self._matrix)

    @property
    def names(self) -> tuple[str, ...]:
        """The axes the piece's cells use, sorted."""
        return self._names

    @property
    def matrix(self) -> np.ndarray:
        """The cells as a read-only matrix: status (cells.LIVE or a PaddingKind), then a
        coordinate per name in `names`."""
        return self._matrix

    @property
    def cells(self) -> tuple[Cell, ...]:
        if self._cells is None:
            names = self._names
            self._cells = tuple(
                Index({names[j]: int(v) for j, v in enumerate(row[1:]) if v}) if row[0] == LIVE
                else Padding(PaddingKind(int(row[0]))) for row in self._matrix.tolist())
        return self._cells

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RaggedFactor):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"RaggedFactor(cells={self.cells!r})"

    def __str__(self) -> str:
        return f"RaggedFactor({self.extent})"


Factor = Union[AxisFactor, BroadcastFactor, PaddingFactor, RaggedFactor]


def factor_size(factors: tuple[Factor, ...] | list[Factor]) -> int:
    """Product of the extents of a factor list."""
    return math.prod(f.extent for f in factors)


def split_factor(f: Factor, j: int) -> tuple[Factor, Factor] | None:
    """Split a factor into an outer part of extent e/j and an inner part of extent j."""
    e = f.extent
    if isinstance(f, AxisFactor):
        return AxisFactor(f.axis, f.step * j, e // j, f.axis_size), AxisFactor(f.axis, f.step, j, f.axis_size)
    if isinstance(f, BroadcastFactor):
        return BroadcastFactor(e // j), BroadcastFactor(j)
    if isinstance(f, PaddingFactor):
        return PaddingFactor(f.kind, e // j), PaddingFactor(f.kind, j)
    return None  # a RaggedFactor is never cut


def same_kind(a: Factor, b: Factor) -> bool:
    """Both broadcasts, or both pure padding of one kind (their extents split and merge freely)."""
    return (isinstance(a, BroadcastFactor) and isinstance(b, BroadcastFactor)) or (
        isinstance(a, PaddingFactor) and isinstance(b, PaddingFactor) and a.kind == b.kind)


# --- cell tables as integer matrices ------------------------------------------------------


def table_matrix(table: CellTable) -> tuple[np.ndarray, list[str]]:
    """Rows of (status, coord per axis), coordinates zeroed outside live cells."""
    if np.any(table.status == OVERSHOOT):
        raise OvershootError("the mapping has positions that decode outside their axes; it has no factor form")
    names = sorted(table.coords)
    mat = np.zeros((len(table.status), 1 + len(names)), dtype=np.int64)
    mat[:, 0] = table.status
    live = table.status == LIVE
    for j, name in enumerate(names):
        mat[:, j + 1] = np.where(live, table.coords[name], 0)
    return mat, names


def _splits_at(mat: np.ndarray, d: int) -> bool:
    """Does the table equal combine(major digit, minor digit) for the split at d?"""
    n = len(mat)
    blocks = mat.reshape(n // d, d, -1)
    if n > 4096:  # most divisors fail at a few sampled cells: look there first, in O(1)
        qs = np.unique(np.r_[0, 1, 2, n // d // 2, n // d - 1].clip(0, n // d - 1))
        rs = np.unique(np.r_[0, 1, 2, d // 2, d - 2, d - 1].clip(0, d - 1))
        if not _blocks_combine(mat[::d][qs], mat[:d][rs], blocks[qs][:, rs]):
            return False
    return _blocks_combine(mat[::d], mat[:d], blocks)


def _blocks_combine(heads: np.ndarray, first: np.ndarray, blocks: np.ndarray) -> bool:
    """Is each block of d rows the combination of its head row with the first block?"""
    major, minor = heads[:, None, :], first[None, :, :]
    major_pad = major[..., :1] != LIVE
    minor_pad = minor[..., :1] != LIVE
    coords = np.where(major_pad | minor_pad, 0, major[..., 1:] + minor[..., 1:])
    status = np.where(major_pad, major[..., :1], np.where(minor_pad, minor[..., :1], LIVE))
    expected = np.concatenate([status, coords], axis=-1)
    return bool(np.array_equal(expected, blocks))


def _divisors(n: int) -> list[int]:
    """The divisors of n strictly between 1 and n, ascending."""
    small, large = [], []
    k = 2
    while k * k <= n:
        if n % k == 0:
            small.append(k)
            if k * k != n:
                large.append(n // k)
        k += 1
    return small + large[::-1]


def _name(mat: np.ndarray, names: list[str], axis_sizes: dict[str, int]) -> Factor:
    """Classify one prime table as an AxisFactor, BroadcastFactor, PaddingFactor or
    RaggedFactor (docs/mapping-language.md step 4)."""
    e = len(mat)
    status, coords = mat[:, 0], mat[:, 1:]
    live = status == LIVE
    if np.all(live) and not np.any(coords):
        return BroadcastFactor(e)
    if e > 1 and live[0] and np.all(status[1:] == status[1]) and not live[1]:
        return PaddingFactor(PaddingKind(int(status[1])), e)
    if np.all(live) and e > 1:
        used = np.nonzero(np.any(coords, axis=0))[0]
        if len(used) == 1:
            col = coords[:, used[0]]
            step = int(col[1])
            if step > 0 and np.array_equal(col, step * np.arange(e)):
                name = names[used[0]]
                return AxisFactor(name, step, e, axis_sizes[name])
    return RaggedFactor.from_table(names, mat)


def factors_from_table(mat: np.ndarray, names: list[str], axis_sizes: dict[str, int]) -> list[Factor]:
    """Steps 2-5 of docs/mapping-language.md on a cell table given as a matrix."""
    pieces: list[Factor] = []
    while len(mat) > 1:
        n = len(mat)
        d = next((d for d in _divisors(n) if _splits_at(mat, d)), None)
        if d is None:
            pieces.append(_name(mat, names, axis_sizes))
            break
        pieces.append(_name(mat[:d], names, axis_sizes))
        mat = mat[::d]
    return canon(list(reversed(pieces)))


def canon(factors: list[Factor]) -> list[Factor]:
    """Merge neighbours (docs/mapping-language.md step 5); BroadcastFactor(1)/PaddingFactor(_,1) pieces vanish."""
    out: list[Factor] = []
    for f in factors:
        if f.extent == 1:
            continue
        out.append(f)
        while len(out) >= 2:
            merged = _merge(out[-2], out[-1])
            if merged is None:
                break
            out[-2:] = [merged]
    return out


def _merge(a: Factor, b: Factor) -> Factor | None:
    if isinstance(a, AxisFactor) and isinstance(b, AxisFactor) and a.axis == b.axis and a.step == b.step * b.extent:
        return AxisFactor(a.axis, b.step, a.extent * b.extent, a.axis_size)
    if same_kind(a, b):
        return attrs.evolve(a, extent=a.extent * b.extent)
    return None


@functools.lru_cache(maxsize=16384)
def factors_of(mapping: Mapping) -> tuple[Factor, ...]:
    """The canonical factor list of a mapping, outer to inner (cached)."""
    from ir.mapping.structural import structural_factors

    return tuple(structural_factors(mapping))


# --- back to a mapping -------------------------------------------------------------------

_NORMAL: set[Mapping] = set()


def factor_mapping(f: AxisFactor | BroadcastFactor | PaddingFactor) -> Mapping:
    """A mapping whose factor form is the single factor `f` (docs/mapping-language.md's rendering)."""
    if isinstance(f, BroadcastFactor):
        return Broadcast(f.extent)
    if isinstance(f, PaddingFactor):
        return Pad(IDENTITY, f.extent, f.kind)
    sym = Symbol(f.axis, f.axis_size)
    if f.axis_size % f.step == 0 and (f.axis_size // f.step) % f.extent == 0:
        node: Mapping = sym if f.step == 1 else Stride(sym, f.step)
        return node if node.size == f.extent else Modulo(node, f.extent)
    total = f.step * f.extent
    base: Mapping = Resize(sym, total) if total <= f.axis_size else Pad(sym, total)
    return base if f.step == 1 else Stride(base, f.step)


def _render(f: Factor, source: Mapping, stride: int) -> Mapping:
    if isinstance(f, RaggedFactor):
        return _render_op(f, source, stride)
    return factor_mapping(f)


def _render_repeat(f: AxisFactor) -> Mapping:
    """A second identical digit range (`B % 2, B % 2` as cells): spelled with `=` so the
    two pieces are not one chain key, whose values joint decoding would merge and
    overshoot; `X / s = e` adds coordinates instead, which is what the cells say."""
    sym: Mapping = Symbol(f.axis, f.axis_size)
    if f.axis_size % f.step:  # keep the stride legal: cut the axis to whole steps first
        sym = Resize(sym, f.axis_size // f.step * f.step)
    base = sym if f.step == 1 else Stride(sym, f.step)
    return Resize(base, f.extent)


def _render_op(f: RaggedFactor, source: Mapping, stride: int) -> Mapping:
    """A ragged piece: `live #k n` when it is a live prefix then one padding kind, else
    the piece cut out of the source mapping (`source / stride % extent`)."""
    status = f.matrix[:, 0]
    n_live = int(np.count_nonzero(status == LIVE))
    tail = status[n_live:]
    if 0 < n_live < f.extent and np.all(status[:n_live] == LIVE) and np.all(tail == tail[0]):
        prefix = _render_prefix(f.names, f.matrix[:n_live], source)
        if prefix is not None:
            return Pad(prefix, f.extent, PaddingKind(int(tail[0])))
    node = source if stride == 1 else Stride(source, stride)
    return node if node.size == f.extent else Modulo(node, f.extent)


def _render_prefix(names: tuple[str, ...], mat: np.ndarray, source: Mapping) -> Mapping | None:
    """A normal mapping whose cells are exactly the (all live) rows of `mat`, when their
    table factors cleanly."""
    sizes = axis_sizes(source)
    facs = factors_from_table(np.array(mat), list(names), sizes)
    if any(isinstance(x, RaggedFactor) for x in facs):
        return None
    return pair_all([_render(x, source, 1) for x in facs])


def normalize(mapping: Mapping) -> Mapping:
    """A canonical mapping equivalent to `mapping`; idempotent (docs/mapping-language.md)."""
    if mapping in _NORMAL:
        return mapping
    facs = factors_of(mapping)
    items: list[Mapping] = []
    stride = factor_size(facs)
    seen: set[AxisFactor] = set()
    for f in facs:
        stride //= f.extent
        if isinstance(f, AxisFactor) and f in seen:
            items.append(_render_repeat(f))
            continue
        if isinstance(f, AxisFactor):
            seen.add(f)
        items.append(_render(f, mapping, stride))
    out = pair_all(items)
    _NORMAL.add(out)
    return out


def short_text(mp: Mapping) -> str:
    """Text of a mapping for a message: the shorter of its own text and its canonical form
    (`B # 32` rather than `(1 # 2, B)`, `K % 32` rather than `K # 64 % 32`)."""
    own = str(mp)
    try:
        canonical = str(normalize(mp))
    except MappingError:
        return own
    return canonical if len(canonical) < len(own) else own
