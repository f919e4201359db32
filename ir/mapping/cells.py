"""Cells of a mapping: Index / Padding / OutOfBounds, and the joint-decoding evaluator.

The evaluator is docs/mapping-language.md (the normative one), vectorized over numpy arrays of
positions so that whole cell tables are cheap; `cell_of` is the one-position view. Its
cost per position is O(depth of the tree), never a table of all positions.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping as AbcMapping
from typing import Union

import attrs
import numpy as np

from ir.errors import OvershootError
from ir.mapping.nodes import Mapping, Modulo, Pad, Pair, PaddingKind, Resize, Stride, Symbol, tree_nodes

__all__ = [
    "Index", "Padding", "OutOfBounds", "Cell", "CellTable", "evaluate", "cell_of",
    "LIVE", "OOB", "OVERSHOOT", "walk", "finalize",
]


class Index(AbcMapping):
    """An immutable tensor index: axis name -> coordinate, zero coordinates dropped.

    `Index(A=1, B=7)`, `Index({"A": 1})`; compares equal to another Index or a plain
    dict with the same non-zero coordinates."""

    __slots__ = ("_items", "_hash")

    def __init__(self, coords: AbcMapping[str, int] | None = None, /, **kw: int) -> None:
        merged = dict(coords or {})
        merged.update(kw)
        self._items = tuple(sorted((k, int(v)) for k, v in merged.items() if v != 0))
        self._hash = hash(self._items)

    def __getitem__(self, key: str) -> int:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def get(self, key: str, default: int = 0) -> int:  # type: ignore[override]
        """Coordinate of an axis; absent axes are 0."""
        try:
            return self[key]
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Index):
            return self._items == other._items
        if isinstance(other, AbcMapping):
            return self._items == Index(other)._items
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return "Index(" + ", ".join(f"{k}={v}" for k, v in self._items) + ")"


@attrs.frozen
class Padding:
    """A position inside the extent that stores no tensor element."""

    kind: PaddingKind = PaddingKind.TOP

    def __repr__(self) -> str:
        return f"Padding({self.kind.label})"


class OutOfBounds:
    """The cell of a position outside the mapping (p >= size). A singleton."""

    _instance: OutOfBounds | None = None

    def __new__(cls) -> OutOfBounds:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __eq__(self, other: object) -> bool:
        return other is OutOfBounds or isinstance(other, OutOfBounds)

    def __hash__(self) -> int:
        return hash("OutOfBounds")

    def __repr__(self) -> str:
        return "OutOfBounds"


Cell = Union[Index, Padding, OutOfBounds]

# Status codes of a CellTable. Padding kinds use their PaddingKind value (0..2).
LIVE = 3
OOB = 4
OVERSHOOT = 5


@attrs.frozen
class CellTable:
    """Cells of many positions at once: a status per position and coordinate arrays.

    `status[i]` is LIVE, OOB, OVERSHOOT or a PaddingKind value; `coords[X][i]` is the
    coordinate of axis X (meaningful where status is LIVE)."""

    status: np.ndarray
    coords: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.status)

    def __getitem__(self, i: int) -> Cell:
        s = int(self.status[i])
        if s == LIVE:
            return Index({k: int(v[i]) for k, v in self.coords.items()})
        if s == OOB:
            return OutOfBounds()
        if s == OVERSHOOT:
            raise OvershootError(f"position decodes to a coordinate outside its axis (entry {i})")
        return Padding(PaddingKind(s))


def _positions(values: object, size: int) -> np.ndarray:
    """Positions as an integer array; object dtype when sizes outgrow int64."""
    dtype = np.int64 if size < 2**62 else object
    return np.asarray(values, dtype=dtype).reshape(-1)


def _largest(mapping: Mapping) -> int:
    """The largest size of any node: a compound base decoded inside a small mapping (`(A, B) / 4,
    (A, ..., A, B) % 4`) has positions as large as its own size, and chain steps up to it."""
    return max(node.size for node in tree_nodes(mapping))


# --- phase 1: walk ---------------------------------------------------------------------
# A contribution is ("term", base, step, extent, values, active) or ("hole", kind, mask).


def chain_base(node: Mapping) -> tuple[Mapping, int]:
    """Base and step of the chain whose top is `node` (a Stride or Modulo)."""
    step = 1
    while isinstance(node, (Stride, Modulo)):
        if isinstance(node, Stride):
            step *= node.n
        node = node.operand
    return node, step


def walk(node: Mapping, pos: np.ndarray, active: np.ndarray) -> list[tuple]:
    """Contributions of `node` at positions `pos` (all < size where active), major first."""
    if isinstance(node, Symbol):
        return [("term", node, 1, node.size, pos, active)]
    if isinstance(node, (Stride, Modulo)):
        base, step = chain_base(node)
        return [("term", base, step, node.size, pos, active)]
    if isinstance(node, Resize):
        return walk(node.operand, pos, active)
    if isinstance(node, Pad):
        inner = pos < node.operand.size
        sub = walk(node.operand, np.where(inner, pos, 0), active & inner)
        return sub + [("hole", node.kind, active & ~inner)]
    if isinstance(node, Pair):
        rsize = node.right.size
        return walk(node.left, pos // rsize, active) + walk(node.right, pos % rsize, active)
    return []  # Broadcast: no coordinate


# --- phase 2: finalize -----------------------------------------------------------------


def finalize(items: list[tuple], n: int, dtype: object = np.int64) -> CellTable:
    """Combine contributions into cells (docs/mapping-language.md phase 2), vectorized."""
    status = np.full(n, LIVE, dtype=np.int8)
    over = np.zeros(n, dtype=bool)
    coords: dict[str, np.ndarray] = {}
    merged: dict[tuple, list] = {}  # (base, step, extent) -> [values, active]
    order: list[tuple] = []  # items in list order, terms replaced by their merge key
    for item in items:
        if item[0] == "hole":
            order.append(item)
            continue
        _, base, step, extent, values, active = item
        key = (base, step, extent)
        vals = np.where(active, values, 0)
        if key in merged:
            merged[key][0] = merged[key][0] + vals
            merged[key][1] = merged[key][1] | active
        else:
            merged[key] = [vals, active]
        order.append(("term", key, active))
    base_pos: dict[Mapping, np.ndarray] = {}
    for (base, step, extent), (vals, active) in merged.items():
        over |= active & (vals >= extent)
        base_pos[base] = base_pos.get(base, 0) + vals * step
    visited: dict[Mapping, np.ndarray] = {}
    for item in order:
        if item[0] == "hole":
            status = np.where((status == LIVE) & item[2], np.int8(item[1]), status)
            continue
        base = item[1][0]
        if base in visited:
            todo = item[2] & ~visited[base]
            visited[base] = visited[base] | item[2]
        else:
            todo = item[2]
            visited[base] = item[2]
            if isinstance(base, Symbol):  # a symbol adds its summed position once
                coords[base.name] = coords.get(base.name, 0) + base_pos[base]
                continue
        if isinstance(base, Symbol) or not np.any(todo):
            continue
        _decode_compound(base, base_pos[base], todo, status, over, coords, dtype)
    for name, vals in coords.items():
        vals = np.broadcast_to(np.asarray(vals, dtype=dtype), (n,))
        coords[name] = vals
        over |= vals >= _axis_size(items, name)
    status = np.where((status == LIVE) & over, np.int8(OVERSHOOT), status)
    return CellTable(status=status, coords={k: np.asarray(v) for k, v in coords.items()})


def _decode_compound(base: Mapping, q: np.ndarray, todo: np.ndarray, status: np.ndarray,
                     over: np.ndarray, coords: dict[str, np.ndarray], dtype: object) -> None:
    """Decode compound base positions `q` where `todo`, updating the outputs in place."""
    q = np.broadcast_to(np.asarray(q, dtype=dtype), todo.shape)
    in_range = todo & (q < base.size)
    over |= todo & ~in_range
    idx = np.nonzero(in_range)[0]
    if len(idx) == 0:
        return
    sub_pos = q[idx]
    sub = finalize(walk(base, sub_pos, np.ones(len(idx), dtype=bool)), len(idx), dtype)
    sub_status = sub.status
    live_here = status[idx] == LIVE
    padded = live_here & (sub_status <= PaddingKind.TOP)
    status[idx[padded]] = sub_status[padded]
    over[idx[sub_status == OVERSHOOT]] = True
    for name, vals in sub.coords.items():
        full = np.zeros(len(status), dtype=dtype)
        full[idx] = vals
        coords[name] = coords.get(name, 0) + full


def _axis_size(items: list[tuple], name: str) -> int:
    """Size of axis `name` as declared by the symbols reachable from the walk."""
    for node in tree_nodes(*(item[1] for item in items if item[0] == "term")):
        if isinstance(node, Symbol) and node.name == name:
            return node.axis_size
    raise AssertionError(f"axis {name} has no symbol")  # unreachable: coords come from symbols


# --- entry points ----------------------------------------------------------------------


def evaluate(mapping: Mapping, positions: object) -> CellTable:
    """Cells of `mapping` at every position of `positions` (vectorized)."""
    pos = _positions(positions, _largest(mapping))
    inside = (pos >= 0) & (pos < mapping.size)
    safe = np.where(inside, pos, 0)
    table = finalize(walk(mapping, safe, inside), len(pos), pos.dtype)
    status = np.where(inside, table.status, np.int8(OOB))
    return CellTable(status=status, coords=table.coords)


def cell_of(mapping: Mapping, p: int) -> Cell:
    """The cell of one position."""
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"a position must be an integer, not {type(p).__name__}")
    if p < 0 or p >= mapping.size:
        return OutOfBounds()
    table = evaluate(mapping, [int(p)])
    if table.status[0] == OVERSHOOT:
        raise OvershootError(f"position {p} of `{mapping}` decodes outside its axes (docs/mapping-language.md)")
    return table[0]
