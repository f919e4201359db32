"""Structural factor form of large mappings (docs/mapping-language.md, "Structural computation").

Gives exactly the factor list that tabulating every cell would give, but tabulates only
what the spec's TAB steps name: ragged pieces, joint decoding and possible overshoots.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ir.errors import MappingError, OvershootError
from ir.mapping.cells import LIVE, chain_base, evaluate
from ir.mapping.factors import (
    AxisFactor, BroadcastFactor, PaddingFactor, RaggedFactor, canon, factor_size, factors_from_table, split_factor,
    table_matrix,
)
from ir.mapping.nodes import (
    Broadcast, Mapping, Modulo, Pad, PaddingKind, Pair, Resize, Stride, Symbol, axis_sizes, pair_all, pair_items,
)
from ir.mapping.ops import split_factors

if TYPE_CHECKING:
    from ir.mapping.factors import Factor

__all__ = ["structural_factors"]

Path = tuple[int, ...]

# Above this size a possibly-overshooting mapping is reported without tabulating it:
# a faithful factor list whose largest live coordinates sum past an axis size has a live
# position that decodes past it, so the table could only raise too.
_OVERSHOOT_TAB_LIMIT = 2**20

# The most cells any table of this module holds (page MAP-limit): a mapping whose factor
# form would need a larger one (a repeated axis over millions of positions) is refused
# in bounded time and memory instead of allocating gigabytes.
TAB_CELL_LIMIT = 2**20


def _bounded(count: int, what: object) -> None:
    if count > TAB_CELL_LIMIT:
        raise MappingError("limit", f"the factor form of `{what}` needs a table of {count} cells (an axis "
                                    f"decoded jointly or repeated); tables are limited to 2**20 cells")


def structural_factors(mapping: Mapping) -> list[Factor]:
    """The canonical factor list of `mapping` (same result as the cell table), whatever its
    size; raises OvershootError where the table would."""
    return _Factoring(mapping).factors(mapping)


def _scope(node: Mapping, path: Path, out: list[tuple[Path, Mapping]]) -> None:
    """Symbols and chain tops one walk visits together, with their paths from the root."""
    if isinstance(node, (Symbol, Stride, Modulo)):
        out.append((path, node))
        return
    for i, child in enumerate(node.children()):  # Pair, Resize, Pad; Broadcast has none
        _scope(child, path + (i,), out)


def _key(node: Mapping) -> tuple[Mapping, int, int]:
    """The merge key (base, step, extent) finalize uses for a scope member."""
    if isinstance(node, Symbol):
        return node, 1, node.size
    base, step = chain_base(node)
    return base, step, node.size


def _cut_at(factors: list[Factor], c: int) -> list[Factor] | None:
    """Make a factor boundary at cell stride c; None when c falls inside a RaggedFactor or off-grid."""
    try:
        got = split_factors(factors, c)
    except MappingError:
        return None
    return None if got is None else [*got[0], *got[1]]


def _cut(factors: list[Factor], lo: int, hi: int) -> list[Factor] | None:
    """CUT: the factors whose cell stride lies in [lo, hi), after cutting at lo and hi."""
    cut = _cut_at(factors, lo)
    cut = None if cut is None else _cut_at(cut, hi)
    if cut is None:
        return None
    out: list[Factor] = []
    stride = 1
    for f in reversed(cut):
        if lo <= stride < hi:
            out.append(f)
        stride *= f.extent
    return out[::-1]


def _apart_item(x: Mapping) -> bool:
    """An item `tab_apart` factors on its own: a symbol, a broadcast, a chain over a symbol,
    or a symbol or broadcast padded."""
    if isinstance(x, (Stride, Modulo)):
        return isinstance(chain_base(x)[0], Symbol)
    if isinstance(x, Pad):
        x = x.operand
    return isinstance(x, (Symbol, Broadcast))


def _padding_kinds(factors: list[Factor]) -> set[int]:
    """The padding kinds the cells of a factor list hold."""
    kinds: set[int] = set()
    for f in factors:
        if isinstance(f, PaddingFactor):
            kinds.add(int(f.kind))
        elif isinstance(f, RaggedFactor):
            kinds.update(int(k) for k in np.flatnonzero(np.bincount(f.matrix[:, 0])) if k != LIVE)
    return kinds


def _inner_block(factors: list[Factor], target: int) -> tuple[list[Factor], list[Factor], int]:
    """Split off the largest innermost block whose size d divides `target`: (O, I, d).

    Whole factors are taken while they divide; the next one contributes its gcd part
    when it can be split (the spec's run over primes(F), ordered to go as far as possible)."""
    outer, inner, d = list(factors), [], 1
    while outer:
        f = outer[-1]
        g = math.gcd(f.extent, target // d)
        if g == f.extent:
            inner.insert(0, outer.pop())
            d *= g
            continue
        parts = split_factor(f, g) if g > 1 else None
        if parts is not None:
            outer[-1] = parts[0]
            inner.insert(0, parts[1])
            d *= g
        break
    return outer, inner, d


class _Factoring:
    """One structural factoring of a root mapping: its axes, and memoised compound bases."""

    def __init__(self, root: Mapping) -> None:
        self.sizes = axis_sizes(root)
        self.names = sorted(self.sizes)
        self.memo: dict[Mapping, list[Factor] | OvershootError] = {}

    # --- tabulation ---------------------------------------------------------------------
    def tab_node(self, node: Mapping) -> list[Factor]:
        """TAB of a node: its cell table (joint decoding), factored by steps 2-5. A pair
        whose chains over compound bases sit among symbols is factored from the table of
        those chains alone (`tab_apart`): the same factors, no table of the whole pair."""
        apart = self.tab_apart(node)
        if apart is not None:
            return apart
        _bounded(node.size, node)
        mat, names = table_matrix(evaluate(node, np.arange(node.size)))
        return factors_from_table(mat, names, self.sizes)

    def tab_apart(self, node: Mapping) -> list[Factor] | None:
        """TAB of a pair `..., B / 64, M, B % 64, K` (B compound) without its whole table:
        TAB of the pair of its chains over compound bases (`B / 64, B % 64`), with each
        other item's factors put in at its own place. Those items are symbols, broadcasts,
        chains over symbols and padded symbols or broadcasts (`1 # 128`): no item shares
        a base with another, so a cell of the pair is the joint chains' cell and the
        items' cells combined (§5.3 finalize: coordinates added, padding wins) and the
        pair's table is the product of the parts'. Which padding kind wins follows the
        order of the items, so all padding must be of one kind. None (tabulate the node)
        when no such split exists: another node kind in the pair, two members with one
        key, a ragged piece of the joint table spanning the place of an item, padding of
        two kinds, or a possible overshoot of the sums."""
        items = pair_items(node)
        joint = [isinstance(x, (Stride, Modulo)) and not isinstance(chain_base(x)[0], Symbol) for x in items]
        if not any(joint) or all(joint) or not all(j or _apart_item(x) for x, j in zip(items, joint)):
            return None
        members: list[tuple[Path, Mapping]] = []
        _scope(node, (), members)
        keys = [_key(n) for _, n in members if n.size >= 2]
        if len(set(keys)) < len(keys):
            return None  # merged terms: their values add before the overshoot check
        inner = pair_all([x for x, j in zip(items, joint) if j])
        if inner.size > TAB_CELL_LIMIT:
            return None
        try:
            rest = self.tab_node(inner)
        except OvershootError:
            return None  # the whole table decides, as before
        out: list[Factor] = []
        below = inner.size  # cell stride of the joint digits still to place
        for x, j in zip(items, joint):
            if j:
                below //= x.size
                continue
            cut = split_factors(rest, below)
            if cut is None:
                return None
            out += [*cut[0], *self.s(x, (), set())]
            rest = list(cut[1])
        out = self.canon(out + rest)
        return None if len(_padding_kinds(out)) > 1 or self.may_overshoot(out) else out

    def tab_rows(self, mat: np.ndarray) -> list[Factor]:
        """TAB of a list of cells given as (status, coordinate per axis) rows."""
        live = mat[:, 0] == LIVE
        for j, name in enumerate(self.names):
            if np.any(live & (mat[:, j + 1] >= self.sizes[name])):
                raise OvershootError(f"a position decodes past axis {name} (docs/mapping-language.md)")
        return factors_from_table(mat, self.names, self.sizes)

    def factor_rows(self, f: Factor) -> np.ndarray:
        """The cells of one factor as rows, digit by digit."""
        _bounded(f.extent, f)
        mat = np.zeros((f.extent, 1 + len(self.names)), dtype=np.int64)
        mat[:, 0] = LIVE
        if isinstance(f, AxisFactor):
            mat[:, 1 + self.names.index(f.axis)] = f.step * np.arange(f.extent)
        elif isinstance(f, PaddingFactor):
            mat[1:, 0] = int(f.kind)
        elif isinstance(f, RaggedFactor):
            mat[:, 0] = f.matrix[:, 0]
            for j, name in enumerate(f.names):
                mat[:, 1 + self.names.index(name)] = f.matrix[:, 1 + j]
        return mat

    def rows(self, factors: list[Factor], count: int) -> np.ndarray:
        """The first `count` cells of a factor list, combined with the pair rule."""
        _bounded(count, ", ".join(map(str, factors)))
        pos = np.arange(count, dtype=np.int64)
        digits = []
        for f in reversed(factors):
            digits.append(pos % f.extent)
            pos = pos // f.extent
        out = np.zeros((count, 1 + len(self.names)), dtype=np.int64)
        out[:, 0] = LIVE
        for f, digit in zip(factors, reversed(digits)):  # major first: its padding wins
            part = self.factor_rows(f)[digit]
            hole = (out[:, 0] == LIVE) & (part[:, 0] != LIVE)
            out[hole, 0] = part[hole, 0]
            out[:, 1:] += part[:, 1:]
        out[out[:, 0] != LIVE, 1:] = 0
        return out

    # --- the procedure ------------------------------------------------------------------
    def factors(self, node: Mapping) -> list[Factor]:
        """factors(E) of the spec: canonical factors of a node decoded on its own."""
        members: list[tuple[Path, Mapping]] = []
        _scope(node, (), members)
        marks = self.marks(members)
        keys = [_key(n) for _, n in members if n.size >= 2]
        if () in marks or len(set(keys)) < len(keys):
            return self.tab_node(node)  # joint decoding of the whole node, or merged terms
        out = self.canon(self.s(node, (), marks))
        if not self.may_overshoot(out):
            return out
        if node.size > _OVERSHOOT_TAB_LIMIT:
            raise OvershootError(f"`{node}` has positions that decode outside their axes")
        return self.tab_node(node)  # possible overshoot: the table decides

    def marks(self, members: list[tuple[Path, Mapping]]) -> set[Path]:
        """Smallest subtrees holding all chains over one compound base (two or more)."""
        by_base: dict[Mapping, list[Path]] = {}
        for path, n in members:
            base = chain_base(n)[0]
            if not isinstance(base, Symbol):
                by_base.setdefault(base, []).append(path)
        out: set[Path] = set()
        for paths in by_base.values():
            if len(paths) < 2:
                continue
            common = paths[0]
            for p in paths[1:]:
                k = 0
                while k < min(len(common), len(p)) and common[k] == p[k]:
                    k += 1
                common = common[:k]
            out.add(common)
        return out

    def base_factors(self, base: Mapping) -> list[Factor]:
        """factors(B) of a compound chain base, memoised (it is decoded on its own)."""
        if base not in self.memo:
            try:
                self.memo[base] = self.factors(base)
            except OvershootError as e:
                self.memo[base] = e
        result = self.memo[base]
        if isinstance(result, OvershootError):
            raise result
        return result

    def s(self, node: Mapping, path: Path, marks: set[Path]) -> list[Factor]:
        """S(x): a (not yet canonical) factor list of a node inside the current scope."""
        if path in marks:
            return self.tab_node(node)
        if isinstance(node, Symbol):
            return [AxisFactor(node.name, 1, node.size, node.axis_size)] if node.size > 1 else []
        if isinstance(node, Broadcast):
            return [BroadcastFactor(node.n)] if node.n > 1 else []
        if isinstance(node, Pair):
            return self.s(node.left, path + (0,), marks) + self.s(node.right, path + (1,), marks)
        if isinstance(node, (Stride, Modulo)):
            return self.chain(node)
        if not isinstance(node, (Resize, Pad)):
            return self.tab_node(node)  # no other node kinds exist; the table is always right
        operand = node.operand
        if isinstance(node, Resize):
            try:
                inner = self.canon(self.s(operand, path + (0,), marks))
            except OvershootError:
                return self.tab_node(node)  # the cut-off part may be what overshoots
            if self.may_overshoot(inner):
                return self.tab_node(node)
            return self.first(inner, node.n)
        if node.n == operand.size:
            return self.s(operand, path + (0,), marks)
        if node.n % operand.size == 0:
            return [PaddingFactor(node.kind, node.n // operand.size)] + self.s(operand, path + (0,), marks)
        return self.pad(self.canon(self.s(operand, path + (0,), marks)), node.n, node.kind)

    def chain(self, node: Mapping) -> list[Factor]:
        """A chain: a digit range of its symbol, or a CUT of its compound base's factors."""
        base, step = chain_base(node)
        if node.size == 1:
            return []
        if isinstance(base, Symbol):
            return [AxisFactor(base.name, step, node.size, base.axis_size)]
        try:
            cut = _cut(self.base_factors(base), step, step * node.size)
        except OvershootError:
            cut = None  # the base overshoots somewhere, perhaps not where this chain reads
        return self.tab_node(node) if cut is None else cut

    def first(self, factors: list[Factor], n: int) -> list[Factor]:
        """FIRST: the factors of the first n positions of a canonical factor list."""
        outer, inner, d = _inner_block(factors, n)
        m = n // d
        if m == 1:
            return inner
        # The first m cells of O only read its innermost factor when m is below its
        # (merged) extent: a prefix of a digit range, broadcast or pure padding.
        last = canon(outer)[-1]
        prefix = split_factor(last, m) if m < last.extent else None
        if prefix is not None:
            return [prefix[1]] + inner
        return self.tab_rows(self.rows(outer, m)) + inner

    def pad(self, factors: list[Factor], n: int, kind: PaddingKind) -> list[Factor]:
        """PAD: padding to n that is not a multiple of |F| keeps the shared inner block."""
        size = factor_size(factors)
        outer, inner, d = _inner_block(factors, math.gcd(size, n))
        _bounded(n // d, f"{', '.join(map(str, factors))} padded to {n}")  # a ragged padding is a table
        live = self.rows(outer, size // d)
        holes = np.zeros(((n - size) // d, live.shape[1]), dtype=np.int64)
        holes[:, 0] = int(kind)
        return self.tab_rows(np.concatenate([live, holes])) + inner

    def canon(self, factors: list[Factor]) -> list[Factor]:
        """Merge neighbours; re-tabulate a PaddingFactor next to a RaggedFactor when the table groups them otherwise."""
        out = canon(factors)
        # A re-tabulated pair comes back in table-canonical form, so it is never replaced
        # again unless a merge changes its neighbours; the loop ends.
        changed = True
        while changed:
            changed = False
            for i in range(len(out) - 1):
                a, b = out[i], out[i + 1]
                if not ({type(a), type(b)} == {PaddingFactor, RaggedFactor}):
                    continue
                again = self.tab_rows(self.rows([a, b], a.extent * b.extent))
                if again != [a, b]:
                    out = canon(out[:i] + again + out[i + 2:])
                    changed = True
                    break
        return out

    def may_overshoot(self, factors: list[Factor]) -> bool:
        """Do the largest live coordinates of some axis sum to its size or more?"""
        reach: dict[str, int] = {}
        for f in factors:
            if isinstance(f, AxisFactor):
                reach[f.axis] = reach.get(f.axis, 0) + f.step * (f.extent - 1)
            elif isinstance(f, RaggedFactor):
                for j, name in enumerate(f.names):  # padding rows hold 0, coordinates are >= 0
                    reach[name] = reach.get(name, 0) + int(f.matrix[:, 1 + j].max())
        return any(v >= self.sizes[name] for name, v in reach.items())
