"""The logical key of every flat position of a level list (docs/machine/index.md): the
digits of each axis the levels hold, composed in one key space, with padding flagged. A
move (backends/cpu/moves.py) matches keys; the layout (backends/cpu/layout.py) reads the
padding flags of its spatial levels for its live rows."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import attrs
import numpy as np

from ir.errors import InternalError, MappingError
from ir.mapping import ops as mops
from ir.mapping.cells import LIVE, OVERSHOOT, Index
from ir.mapping.factors import AxisFactor, Factor, PaddingFactor, RaggedFactor
from ir.mapping.nodes import Mapping, pair_all
from ir.mapping.ops import DigitRange

__all__ = ["KeySpace", "LiveCells", "RadixWhere", "radix_where", "joint_frag", "key_blocks", "key_space", "key_dtype", "live_cells", "logical_keys", "logical_pad",
           "live_prefix", "looker", "padding"]


@attrs.frozen
class KeySpace:
    """The fragments a key is made of (sorted) and the radix of each; `size` keys in all.
    `modulus`: the span of each fragment's digit in a coordinate, its extent unless a
    resized digit leaves a gap below the axis's next fragment (`A / 4, A % 4 = 3`: A[1:3)
    spans 4 values of A, of which the key holds 3)."""

    frags: tuple[DigitRange, ...]
    radix: tuple[int, ...]
    size: int
    modulus: tuple[int, ...]

    def contribution(self, axis: str, coords: np.ndarray) -> np.ndarray:
        """Key contribution of coordinates of one axis: its digits inside every fragment."""
        out = np.zeros(coords.shape, np.int64)
        for f, r, n in zip(self.frags, self.radix, self.modulus):
            if f.axis == axis:
                out += ((coords // f.lo) % n) * r
        return out


def key_space(frags: Sequence[DigitRange] | frozenset[DigitRange]) -> KeySpace:
    """Mixed radix over the fragments, the last one fastest."""
    fs = tuple(sorted(frags))
    radix: list[int] = []
    size = 1
    for f in reversed(fs):
        radix.append(size)
        size *= f.extent
    return KeySpace(fs, tuple(reversed(radix)), size, tuple(_span(f, fs) for f in fs))


def joint_frag(levels: Sequence[Mapping]) -> frozenset[DigitRange]:
    """frag of the levels' joint mapping `[L0, L1, ...]`, what a move is keyed on. When its
    factor form needs a table past the mapping limit (an axis padded and split over two
    levels with others between the parts, as `M # 512 / 128, N, 1 # 8` over
    `N % 64, M # 512 % 128`: the structural factoring tabulates the whole subtree holding
    both parts), the union of each level's own fragments: the same digits of each axis,
    at most up to the padded size instead of the live one (a wider key radix, the same
    matching); `_parts` then keys the cells (`_cell_keys`)."""
    try:
        return mops.frag(pair_all(list(levels)))
    except MappingError as e:
        if e.category != "limit":
            raise
    try:
        return frozenset(mops.merge_frags(f for mp in levels for f in mops.frag(mp)))
    except MappingError as e:
        raise InternalError(f"cpu move: no key fragments for the levels {[str(mp) for mp in levels]}: {e}") from e


def _span(f: DigitRange, frags: tuple[DigitRange, ...]) -> int:
    """How many values of its axis `f`'s digit is read modulo: its extent, unless the axis's
    next fragment above it starts on no multiple of `f.hi` (a resized digit, A[1:3) under
    A[4:16)); then up to that fragment's start."""
    above = [g.lo for g in frags if g.axis == f.axis and g.lo >= f.hi]
    nxt = min(above) if above else None
    return nxt // f.lo if nxt is not None and nxt % f.hi and nxt % f.lo == 0 else f.extent


def _refined(factors: tuple[Factor, ...], space: KeySpace) -> tuple[Factor, ...]:
    """The factors cut at the key fragments' ends, so each AxisFactor is inside a key fragment
    or disjoint from all of them."""
    if not space.frags:
        return factors
    bounds = tuple(AxisFactor(f.axis, f.lo, f.extent, f.hi) for f in space.frags)
    out = mops.refine(factors, bounds)
    if out is None:
        raise InternalError(f"cpu move: factors {[str(f) for f in factors]} have no common "
                            f"refinement with the key fragments {[str(f) for f in space.frags]}")
    return out


def _factor_parts(f: Factor, space: KeySpace) -> tuple[np.ndarray, np.ndarray | None]:
    """(key contribution, padding flag or None) of each digit of one factor."""
    d = np.arange(f.extent, dtype=np.int64)
    if isinstance(f, AxisFactor):
        return space.contribution(f.axis, d * f.step), None
    if isinstance(f, PaddingFactor):
        return np.zeros(f.extent, np.int64), d != 0
    if isinstance(f, RaggedFactor):
        keys = np.zeros(f.extent, np.int64)
        pad = np.ones(f.extent, bool)
        for i, cell in enumerate(f.cells):
            if isinstance(cell, Index):
                pad[i] = False
                keys[i] = sum(int(space.contribution(a, np.array(cell[a]))) for a in cell)
        return keys, pad
    return np.zeros(f.extent, np.int64), None  # BroadcastFactor: no coordinate


def key_dtype(space: KeySpace) -> np.dtype:
    """The narrowest of int32 / int64 that holds every key of `space` (a key array is as
    long as the buffer: a 16 M-cell tensor's keys are 64 MiB in int32, 128 in int64)."""
    return np.dtype(np.int32) if space.size <= np.iinfo(np.int32).max else np.dtype(np.int64)


def _outer(parts: Sequence[tuple[np.ndarray, np.ndarray | None]],
           dtype: np.dtype | None) -> tuple[np.ndarray | None, np.ndarray]:
    """Keys (None: `dtype` None) and padding flags of every combination of the factors'
    digits (the last fastest)."""
    keys = None if dtype is None else np.zeros(1, dtype)
    pad = np.zeros(1, bool)
    for k, p in parts:
        if dtype is not None:
            keys = np.add.outer(keys, k.astype(dtype, copy=False)).reshape(-1)
        pad = np.logical_or.outer(pad, p).reshape(-1) if p is not None else np.repeat(pad, len(k))
    return keys, pad


def _parts(levels: tuple[Mapping, ...], space: KeySpace) -> list[tuple[np.ndarray, np.ndarray | None]] | None:
    """(key contribution, padding flag) of each digit of each factor of the levels' joint
    factor form; None when that form would need a table too large to build (an axis padded
    and split over two levels, as `N # 128 / 128` and `N # 128 % 128`): the keys then come
    from the cells (`_cell_keys`)."""
    try:
        factors = pair_all(list(levels)).factors()  # their mixed radix is the buffer's flat index
    except MappingError as e:
        if e.category != "limit":
            raise
        return None
    return [_factor_parts(f, space) for f in _refined(factors, space)]


_BLOCK = 1 << 20  # positions whose cells are evaluated at once


def _cell_keys(levels: tuple[Mapping, ...], space: KeySpace, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(key, padding flag) of the flat positions `flat`, from the cells of the levels' joint
    mapping (the slow way, a block of positions at a time)."""
    joint = pair_all(list(levels))
    keys, pad = np.zeros(len(flat), key_dtype(space)), np.zeros(len(flat), bool)
    for lo in range(0, len(flat), _BLOCK):
        table = joint.cells(flat[lo:lo + _BLOCK])
        if np.any(table.status == OVERSHOOT):
            raise InternalError(f"cpu move: a position of {joint} decodes outside its axis")
        live = table.status == LIVE
        pad[lo:lo + _BLOCK] = ~live
        for axis, coords in table.coords.items():
            keys[lo:lo + _BLOCK] += np.where(live, space.contribution(axis, np.where(live, coords, 0)), 0)
    return keys, pad


def _positions(levels: tuple[Mapping, ...]) -> np.ndarray:
    return np.arange(math.prod(mp.size for mp in levels), dtype=np.int64)


def logical_keys(levels: tuple[Mapping, ...], space: KeySpace) -> tuple[np.ndarray, np.ndarray]:
    """Key (`key_dtype(space)`) and padding flag of every flat position of the buffer with
    these levels."""
    parts = _parts(levels, space)
    return _cell_keys(levels, space, _positions(levels)) if parts is None else _outer(parts, key_dtype(space))


def _looked_up(levels: tuple[Mapping, ...], space: KeySpace, where: np.ndarray,
               block: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """(`where[key]`, padding flag) of every flat position of the buffer with these levels,
    its keys made and dropped a block of about `block` positions at a time: a tile's write
    into a large tensor never holds the whole tensor's keys."""
    parts, dtype = _parts(levels, space), key_dtype(space)
    if parts is None:
        keys, pad = _cell_keys(levels, space, _positions(levels))
        return where[keys], pad
    cut = _cut(parts, block)
    head_keys, head_pad = _outer(parts[:cut], dtype)
    tail_keys, tail_pad = _outer(parts[cut:], dtype)
    width = len(tail_keys)
    index = np.empty(len(head_keys) * width, where.dtype)
    pad = np.empty(index.size, bool)
    rows = max(1, block // width)
    for r0 in range(0, len(head_keys), rows):
        r1 = min(len(head_keys), r0 + rows)
        index[r0 * width:r1 * width] = where[np.add.outer(head_keys[r0:r1], tail_keys).reshape(-1)]
        pad[r0 * width:r1 * width] = np.logical_or.outer(head_pad[r0:r1], tail_pad).reshape(-1)
    return index, pad


def _cut(parts: list[tuple[np.ndarray, np.ndarray | None]], block: int) -> int:
    """How many outer digits of `parts` are summed a few rows at a time (the rest, of at
    most about `block` positions, are one table)."""
    cut = len(parts)
    while cut > 0 and math.prod(len(k) for k, _ in parts[cut - 1:]) <= block:
        cut -= 1
    return min(cut, len(parts) - 1) if parts else 0


def key_blocks(parts: list[tuple[np.ndarray, np.ndarray | None]], dtype: np.dtype,
               block: int = 1 << 20) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(first flat position, keys, padding flags) of consecutive runs of about `block`
    positions of the buffer whose factor digits are `parts` (`_parts`), in flat order: the
    outer digits' sums a few rows at a time over the inner digits' table, so no array of
    the whole buffer's size is made."""
    cut = _cut(parts, block)
    head_keys, head_pad = _outer(parts[:cut], dtype)
    tail_keys, tail_pad = _outer(parts[cut:], dtype)
    width = len(tail_keys)
    rows = max(1, block // width)
    for r0 in range(0, len(head_keys), rows):
        r1 = min(len(head_keys), r0 + rows)
        yield (r0 * width, np.add.outer(head_keys[r0:r1], tail_keys).reshape(-1),
               np.logical_or.outer(head_pad[r0:r1], tail_pad).reshape(-1))


def looker(levels: tuple[Mapping, ...], space: KeySpace,
           where: np.ndarray) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """`_looked_up` at given flat positions only, as a function of the positions: each
    position's digits over the factor grid (the last fastest, as `_outer`) pick its key and
    padding flag part by part; the levels' factor form is found once (a plan is asked a
    block of positions at a time: issue 61, the first run)."""
    parts, dtype = _parts(levels, space), key_dtype(space)
    if parts is None:
        def by_cells(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            keys, pad = _cell_keys(levels, space, np.asarray(flat, np.int64))
            return where[keys], pad
        return by_cells
    parts = [(k.astype(dtype, copy=False), p) for k, p in parts]
    total = math.prod(len(k) for k, _ in parts)
    narrow = np.int32 if total <= np.iinfo(np.int32).max else np.int64

    def at(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keys, pad = np.zeros(len(flat), dtype), np.zeros(len(flat), bool)
        rest = np.array(flat, narrow)
        for k, p in reversed(parts):  # one digit at a time, the fastest first
            digit = rest % len(k)
            rest //= len(k)
            keys += k[digit]
            if p is not None:
                pad |= p[digit]
        return where[keys], pad
    return at


@attrs.frozen
class RadixWhere:
    """The key -> source position table of `moves._where` as arithmetic, for a source whose
    factor digits each add `step` x digit to the key and whose keys are every value of the
    space once (no broadcast, the key steps a mixed radix; a padded digit's live values its
    first ones, the padding positions holding no key): a key's digits are then the position's. `where[keys]` gives the positions, `dtype` theirs; no table of the
    whole key space is made (issue 61, first-run memory: a DMA from a 512 Ki-cell i8
    tensor made a 2 MiB int32 table, 4x the tensor)."""

    digits: tuple[tuple[int, int, int], ...]   # (key step, extent, position step), key steps ascending
    dtype: np.dtype

    def __getitem__(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys)
        out = np.zeros(keys.shape, self.dtype)
        for step, extent, position in self.digits:
            out += (keys // step % extent * position).astype(self.dtype, copy=False)
        return out


def live_prefix(pad: np.ndarray) -> int:
    """How many live values the padding flags `pad` have when those are its first ones (the
    padding follows every live value), else 0."""
    live = int(np.count_nonzero(~pad))
    return 0 if pad[:live].any() else live


def radix_where(parts: Sequence[tuple[np.ndarray, np.ndarray | None]], size: int,
                dtype: np.dtype) -> RadixWhere | None:
    """`RadixWhere` of a source whose factor digits are `parts` (`_parts`, C order over them
    its flat order) in a key space of `size` keys, or None when its keys are no such
    permutation of its positions."""
    digits, position = [], 1
    for keys, pad in reversed(parts):
        extent = len(keys)
        if pad is not None and pad.any():  # a padded digit (a `1 # 2` cluster, padding slices): its
            live = live_prefix(pad)  # live values must be its first ones; they alone hold keys
            if not live or keys[0] != 0:
                return None
            keys = keys[:live]
        if len(keys) > 1:
            step = int(keys[1]) - int(keys[0])
            if keys[0] != 0 or step <= 0 or not np.array_equal(keys, np.arange(len(keys), dtype=np.int64) * step):
                return None
            digits.append((step, len(keys), position))
        position *= extent
    digits.sort()
    radix = 1
    for step, extent, _ in digits:
        if step != radix:
            return None
        radix *= extent
    return RadixWhere(tuple(digits), np.dtype(dtype)) if radix == size else None


Block = int | Callable[[int], int]
"""The most cells of a `LiveCells`' tail, or the rule giving it from the number of live cells."""


@attrs.frozen
class LiveCells:
    """The live (not padding) cells of a level list in flat order, `n` of them. A cell is
    padding when one digit of the joint factor form is (`_outer`), so the live ones are the
    grid of every factor digit's live values: `digits` holds, per digit (outer to inner),
    the flat-position and key contributions of its live values. `at(k)` gives the
    (positions, keys) of the k-th live cells (a division per digit); `run(lo, hi)` those of
    cells lo..hi-1 by sums of the inner digits' table (`tail`) and a few outer rows: no
    division per cell."""

    digits: tuple[tuple[np.ndarray, np.ndarray], ...]
    n: int
    tail: tuple[np.ndarray, np.ndarray]
    head: int              # the digits before the tail's
    block: Block = 1 << 14  # what bounded the tail's cells (`live_cells`)

    def at(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._digits(np.asarray(k, np.int64), self.digits)

    def _digits(self, k: np.ndarray, digits: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        pos, key = np.zeros(k.shape, np.int64), np.zeros(k.shape, np.int64)
        rest = k.copy()
        for p, q in reversed(digits):
            rest, d = np.divmod(rest, len(p))
            pos += p[d]
            key += q[d]
        return pos, key

    def run(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        width = len(self.tail[0])
        r0, r1 = lo // width, -(-hi // width)
        hp, hk = self._digits(np.arange(r0, r1, dtype=np.int64), self.digits[:self.head])
        cut = slice(lo - r0 * width, hi - r0 * width)
        return (np.add.outer(hp, self.tail[0]).reshape(-1)[cut], np.add.outer(hk, self.tail[1]).reshape(-1)[cut])

    def fixing(self, fixed: Sequence[int], block: Block | None = None) -> LiveCells:
        """These cells with the digits `fixed` (indices into `digits`) held at their first
        value: the cells whose other digits run over every value (their tail bounded by
        `block`, by default as these cells' is)."""
        return _grid(tuple((p[:1], q[:1]) if i in fixed else (p, q) for i, (p, q) in enumerate(self.digits)),
                     self.block if block is None else block)


def live_cells(levels: tuple[Mapping, ...], space: KeySpace, block: Block = 1 << 14) -> LiveCells | None:
    """The `LiveCells` of the buffer with these levels, its tail the inner digits of at most
    `block` live cells (or `block(n)` of n live cells); None when the keys come from the
    cells (`_parts` is None)."""
    parts = _parts(levels, space)
    if parts is None:
        return None
    digits, weight = [], 1
    for k, p in reversed(parts):
        d = np.arange(len(k), dtype=np.int64) if p is None else np.flatnonzero(~p).astype(np.int64)
        digits.append((d * weight, k.astype(np.int64, copy=False)[d]))
        weight *= len(k)
    digits.reverse()
    return _grid(tuple(digits), block)


def _grid(digits: tuple[tuple[np.ndarray, np.ndarray], ...], block: Block) -> LiveCells:
    """The `LiveCells` of these digits (outer to inner), its tail the inner digits of at
    most `block` cells (or `block(n)` of n cells)."""
    n = math.prod(len(p) for p, _ in digits)
    most = block(n) if callable(block) else block
    head, width = len(digits), 1
    while head > 0 and width * len(digits[head - 1][0]) <= most:
        head -= 1
        width *= len(digits[head][0])
    tail_p, tail_k = np.zeros(1, np.int64), np.zeros(1, np.int64)
    for p, q in digits[head:]:
        tail_p, tail_k = np.add.outer(tail_p, p).reshape(-1), np.add.outer(tail_k, q).reshape(-1)
    return LiveCells(digits, n, (tail_p, tail_k), head, block)


def padding(levels: tuple[Mapping, ...], space: KeySpace) -> np.ndarray:
    """The padding flag of every flat position of the buffer with these levels (no keys)."""
    parts = _parts(levels, space)
    return (_cell_keys(levels, space, _positions(levels)) if parts is None else _outer(parts, None))[1]


def logical_pad(levels: tuple[Mapping, ...]) -> np.ndarray:
    """Padding flag of every flat position of the levels' joint mapping (`padding`: no key
    array is made beside the flags, issue 61, first-run memory: drawn_s2_3's commit made
    4 MiB of keys to read 1 MiB of flags)."""
    return padding(levels, key_space(()))
