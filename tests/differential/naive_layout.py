"""Where each element lives, for the naive reference model (naive_model.py).

A value of the model is a flat buffer over the positions of its levels (chip, cluster,
slice, ... in C order), as the data model of the Tensor Unit pipeline describes it. The
logical index of a position is the cell of the levels' pair chain `M1, M2, ..., Mk` at
the linear position (the "holds" rule of mapping expressions): evaluated with the public
`Mapping.cells` and nothing else of the compiler.

A *move* fills every live output position with the input element of the same logical
index, restricted to the digits the input holds of each axis (digits it lacks are a
broadcast: the value repeats along them); output padding is zero. Tensor Unit stages look
up within the same (chip, cluster, slice) position, Tensor DMA globally. The digits an
input holds are read off its mapping trees here (`digits`), independently of the
compiler's factor forms.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ir.mapping import Mapping
from ir.mapping.nodes import Broadcast, Modulo, Pad, Pair, Resize, Stride, Symbol

LIVE = 3  # the status of a live cell in a `Mapping.cells` table


class ModelError(AssertionError):
    """The naive model cannot evaluate a kernel (a move finds no input element)."""


@dataclass
class Value:
    """A buffer over `levels` (flat, C order), `dtype` a spec name, `spatial` the number
    of leading levels that are chip/cluster/slice (1 for HBM, 3 on the device)."""

    dtype: str
    levels: tuple[Mapping, ...]
    data: np.ndarray
    spatial: int

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(m.size for m in self.levels)


def chain(levels: tuple[Mapping, ...]) -> Mapping:
    out = levels[-1]
    for m in reversed(levels[:-1]):
        out = Pair(m, out)
    return out


def _split_compound(node: Mapping) -> bool:
    """Does a `/`, `%` chain of `node` split a compound base other than `Symbol # n`?"""
    if isinstance(node, (Stride, Modulo)):
        base = node.operand
        while isinstance(base, (Stride, Modulo)):
            base = base.operand
        while isinstance(base, (Pad, Resize)):
            base = base.operand
        return not isinstance(base, Symbol)
    return any(_split_compound(c) for c in node.children())


def level_cells(m: Mapping) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    table = m.cells(np.arange(m.size, dtype=np.int64))
    live = table.status == LIVE
    return live, {k: np.where(live, v, 0).astype(np.int64) for k, v in table.coords.items()}


@functools.lru_cache(maxsize=16)
def index_of(levels: tuple[Mapping, ...]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(live mask, coordinates per axis) of every position of the levels' buffer.

    The cell of the pair chain of the levels. When no level splits a compound base with
    `/` or `%`, that is the sum of the levels' own cells (padding if any level is
    padding), with a coordinate past its axis, a split `Symbol # n` read past the
    symbol, as padding; otherwise the pair chain is evaluated as a whole."""
    if any(_split_compound(m) for m in levels):
        joint = chain(levels)
        return level_cells(joint)
    shape = tuple(m.size for m in levels)
    live = np.ones(shape, dtype=bool)
    coords: dict[str, np.ndarray] = {}
    sizes: dict[str, int] = {}
    for k, m in enumerate(levels):
        view = [1] * len(levels)
        view[k] = m.size
        l_live, l_coords = level_cells(m)
        live = live & l_live.reshape(view)
        for axis, c in l_coords.items():
            coords[axis] = coords.get(axis, 0) + c.reshape(view)
        for node in _symbols(m):
            sizes[node.name] = node.axis_size
    for axis, c in coords.items():
        live = live & (c < sizes[axis])
    live = live.reshape(-1)
    return live, {a: np.where(live, np.broadcast_to(c, shape).reshape(-1), 0) for a, c in coords.items()}


def _symbols(node: Mapping) -> list[Symbol]:
    if isinstance(node, Symbol):
        return [node]
    return [s for c in node.children() for s in _symbols(c)]


def _chain_digits(node: Mapping, out: dict[str, set], step: int, extent: int) -> None:
    """Digits of a `/`, `%` chain of total `step` and `extent` over its base `node`."""
    if isinstance(node, Symbol):
        out.setdefault(node.name, set()).add((step, extent))
    elif isinstance(node, (Pad, Resize)):
        _chain_digits(node.operand, out, step, extent)
    else:  # a compound base split by the chain: count the whole base as held
        digits(node, out)


def digits(node: Mapping, out: dict[str, set] | None = None) -> dict[str, set]:
    """Axis -> {(step, extent)}: the mixed-radix digits `(c // step) % extent` of each
    axis coordinate `c` that positions of `node` hold."""
    out = {} if out is None else out
    if isinstance(node, Symbol):
        out.setdefault(node.name, set()).add((1, node.size))
    elif isinstance(node, (Stride, Modulo)):
        step, top = 1, node
        while isinstance(top, (Stride, Modulo)):
            step *= top.n if isinstance(top, Stride) else 1
            top = top.operand
        _chain_digits(top, out, step, node.size)
    elif isinstance(node, Resize) and isinstance(node.operand, Symbol):
        out.setdefault(node.operand.name, set()).add((1, node.size))
    elif isinstance(node, (Pad, Resize)):
        digits(node.operand, out)
    elif isinstance(node, Pair):
        digits(node.left, out)
        digits(node.right, out)
    else:
        assert isinstance(node, Broadcast), node
    return out


def _merged(ranges: set) -> list[tuple[int, int]]:
    """Adjacent digit ranges joined: (s, e) and (s * e, f) hold the digits (s, e * f)."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(ranges):
        if out and out[-1][0] * out[-1][1] == s:
            out[-1] = (out[-1][0], out[-1][1] * e)
        else:
            out.append((s, e))
    return out


def restrict(coords: dict[str, np.ndarray], held: dict[str, set], n: int) -> dict[str, np.ndarray]:
    """Each held axis' coordinates reduced to the held digits (absent axes are 0)."""
    out = {}
    for axis, ranges in held.items():
        c = coords.get(axis)
        if c is None:
            out[axis] = np.zeros(n, dtype=np.int64)
            continue
        merged = _merged(ranges)
        if len(merged) == 1 and merged[0][0] == 1 and (c.size == 0 or c.max() < merged[0][1]):
            out[axis] = c                                  # every digit held
        else:
            out[axis] = sum(((c // s) % e) * s for s, e in merged)
    return out


def _keys(coords: dict[str, np.ndarray], axes: list[str], sizes: dict[str, int], prefix: np.ndarray) -> np.ndarray:
    key = prefix.astype(object if math.prod(sizes.values()) > 2**40 else np.int64)
    for axis in axes:
        key = key * sizes[axis] + coords[axis]
    return key


def move(src: Value, levels: tuple[Mapping, ...], spatial: int, per_slice: bool) -> Value:
    """`src` re-laid out over `levels` (same dtype): every live position takes the source
    element of the same logical index restricted to the source's digits."""
    levels = tuple(levels)
    out_pos, taken = _gather(tuple(src.levels), levels, spatial, per_slice)
    data = np.zeros(math.prod(m.size for m in levels), dtype=src.data.dtype)
    data[out_pos] = src.data[taken]
    return Value(src.dtype, levels, data, spatial)


@functools.lru_cache(maxsize=32)
def _gather(src_levels: tuple[Mapping, ...], levels: tuple[Mapping, ...], spatial: int,
            per_slice: bool) -> tuple[np.ndarray, np.ndarray]:
    """(the live positions of `levels`, the source position each takes) of a move: a
    function of the two layouts alone, so it is worked out once for every input set a
    kernel is run on."""
    src_live, src_coords = index_of(src_levels)
    out_live, out_coords = index_of(levels)
    held = digits(chain(src_levels))
    axes = sorted(held)
    sizes = {a: sum((e - 1) * s for s, e in held[a]) + 1 for a in axes}
    src_pos, out_pos = np.flatnonzero(src_live), np.flatnonzero(out_live)
    if per_slice:
        src_prefix = src_pos // math.prod(m.size for m in src_levels[spatial:])
        out_prefix = out_pos // math.prod(m.size for m in levels[spatial:])
    else:
        src_prefix, out_prefix = np.zeros(len(src_pos), np.int64), np.zeros(len(out_pos), np.int64)
    src_c = {a: c[src_pos] for a, c in src_coords.items()}
    mine = restrict(src_c, held, len(src_pos))
    if any(np.any(mine[a] != src_c.get(a, 0)) for a in axes):
        raise ModelError(f"the digits read off {chain(src_levels)} do not cover its own cells")
    src_key = _keys(mine, axes, sizes, src_prefix)
    out_key = _keys(restrict({a: c[out_pos] for a, c in out_coords.items()}, held, len(out_pos)),
                    axes, sizes, out_prefix)
    order = np.argsort(src_key, kind="stable")
    in_order = src_key[order]
    found = np.minimum(np.searchsorted(in_order, out_key), max(len(order) - 1, 0))
    if len(out_key) and (len(order) == 0 or np.any(in_order[found] != out_key)):
        raise ModelError(f"a live cell of {chain(levels)} has no source element in {chain(src_levels)}")
    taken = src_pos[order[found]]
    out_pos.flags.writeable = taken.flags.writeable = False  # shared by every later move through these layouts
    return out_pos, taken
