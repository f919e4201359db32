"""Mapping expression trees: the seven node types of docs/mapping-language.md, with their sizes and checks.

A `Mapping` is immutable and hashable; `==` is tree equality (docs/mapping-language.md). Every
constructor applies the well-formedness rules of docs/mapping-language.md, so a tree built
by hand is exactly as legal as one built by the parser.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

import attrs

from ir.errors import MappingError

if TYPE_CHECKING:
    from ir.mapping.cells import Cell, CellTable
    from ir.mapping.factors import Factor

__all__ = [
    "Mapping", "Symbol", "Broadcast", "Stride", "Modulo", "Resize", "Pad", "Pair",
    "PaddingKind", "IDENTITY", "pair_all", "pair_items", "tree_nodes", "axis_sizes", "written",
]


class PaddingKind(enum.IntEnum):
    """Padding kinds ordered by strictness: BOTTOM < ZERO < TOP (docs/mapping-language.md)."""

    BOTTOM = 0
    ZERO = 1
    TOP = 2

    @property
    def marker(self) -> str:
        """The operator text of this kind: `#`, `#{0}` or `#{!}`."""
        return {PaddingKind.TOP: "#", PaddingKind.ZERO: "#{0}", PaddingKind.BOTTOM: "#{!}"}[self]

    @property
    def label(self) -> str:
        """Short lowercase name used in vectors and tables (`top`, `zero`, `bottom`)."""
        return self.name.lower()


# The deepest tree any constructor builds (page MAP-limit). Texts are held to 64 levels by
# the parser; trees grow further only by substituting mappings into escapes or by building
# them by hand, and every walk of a tree (printing, hashing, cells, factors) recurses on
# it, so the bound is what keeps those walks inside Python's recursion limit.
MAX_NODE_DEPTH = 128


def _deeper(node: Mapping, *children: Mapping) -> None:
    """Record the node's depth (1 + its deepest operand) and refuse trees beyond the limit."""
    if not all(isinstance(c, Mapping) for c in children):
        raise MappingError("syntax", f"the operands of {type(node).__name__} must be mappings")
    depth = 1 + max((c.depth for c in children), default=0)
    if depth > MAX_NODE_DEPTH:
        raise MappingError("limit", f"the mapping nests deeper than {MAX_NODE_DEPTH} levels "
                                    f"(escapes substituted into escapes count too)")
    object.__setattr__(node, "depth", depth)


def _int(n: object, what: str) -> int:
    """Accept only real integers (bool excluded) for sizes and operator arguments."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise MappingError("syntax", f"{what} must be an integer, not {type(n).__name__}")
    return n


@attrs.frozen(cache_hash=True, repr=False)
class Mapping:
    """Base of every mapping node. `size` is |E|, computed structurally once."""

    size: int = attrs.field(init=False, eq=False, repr=False)
    depth: int = attrs.field(init=False, eq=False, repr=False)

    # --- structure -----------------------------------------------------------------
    def children(self) -> tuple[Mapping, ...]:
        """Direct operand nodes, major to minor."""
        return ()

    # --- builders that apply the parser's checks ---------------------------------
    def pair(self, other: Mapping) -> Mapping:
        """`self, other` (self major)."""
        return Pair(self, other)

    def stride(self, n: int) -> Mapping:
        """`self / n`."""
        return Stride(self, n)

    def modulo(self, n: int) -> Mapping:
        """`self % n`."""
        return Modulo(self, n)

    def resize(self, n: int) -> Mapping:
        """`self = n`."""
        return Resize(self, n)

    def pad(self, n: int, kind: PaddingKind = PaddingKind.TOP) -> Mapping:
        """`self # n` (or `#{0}` / `#{!}` by kind)."""
        return Pad(self, n, kind)

    # --- semantics (implemented in sibling modules) -------------------------------
    def cell(self, p: int) -> Cell:
        """The cell at position `p`: Index, Padding(kind) or OutOfBounds.

        Raises OvershootError for a legal position that decodes out of range."""
        from ir.mapping.cells import cell_of

        return cell_of(self, p)

    def cells(self, positions: object) -> CellTable:
        """Vectorized cells of many positions (a numpy integer array)."""
        from ir.mapping.cells import evaluate

        return evaluate(self, positions)

    def factors(self) -> tuple[Factor, ...]:
        """The canonical factor form (docs/mapping-language.md), outer to inner."""
        from ir.mapping.factors import factors_of

        return factors_of(self)

    def equivalent(self, other: Mapping) -> bool:
        """Cell equality at every position (docs/mapping-language.md)."""
        if not isinstance(other, Mapping):
            return False
        if self == other:
            return True
        return self.size == other.size and self.factors() == other.factors()

    def matches(self, other: Mapping) -> bool:
        """`equivalent`, where a mapping without a factor form (overshooting positions) matches nothing."""
        try:
            return self.equivalent(other)
        except MappingError:
            return False

    def normalize(self) -> Mapping:
        """A canonical mapping equivalent to this one (idempotent)."""
        from ir.mapping.factors import normalize

        return normalize(self)

    def axes(self) -> frozenset[str]:
        """Names of the axes mentioned anywhere in the tree."""
        return frozenset(axis_sizes(self))

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f'm("{self.text()}")'

    def text(self) -> str:
        """Display form (docs/mapping-language.md); it re-parses to an equivalent mapping."""
        raise NotImplementedError

    def _operand_text(self) -> str:
        """Text of this node when it is the operand of a postfix operator."""
        return self.text()


@attrs.frozen(cache_hash=True, repr=False)
class Symbol(Mapping):
    """An axis `X`: position p is coordinate p of X."""

    name: str
    axis_size: int

    def __attrs_post_init__(self) -> None:
        _int(self.axis_size, "axis size")
        if self.axis_size < 1:
            raise MappingError("invalid_axis_decl", f"axis {self.name} has size {self.axis_size}; sizes must be >= 1")
        object.__setattr__(self, "size", self.axis_size)
        object.__setattr__(self, "depth", 1)

    def text(self) -> str:
        return self.name


@attrs.frozen(cache_hash=True, repr=False)
class Broadcast(Mapping):
    """A bare integer `n`: n positions that all hold the empty index; `1` is the identity."""

    n: int

    def __attrs_post_init__(self) -> None:
        _int(self.n, "broadcast size")
        if self.n < 1:
            raise MappingError("zero_size", f"broadcast size must be >= 1, got {self.n}")
        object.__setattr__(self, "size", self.n)
        object.__setattr__(self, "depth", 1)

    def text(self) -> str:
        return str(self.n)


@attrs.frozen(cache_hash=True, repr=False)
class _Postfix(Mapping):
    """A postfix operator on one operand, `E <marker> n`."""

    operand: Mapping
    n: int
    marker: ClassVar[str] = ""

    def children(self) -> tuple[Mapping, ...]:
        return (self.operand,)

    def text(self) -> str:
        return f"{self.operand._operand_text()} {self.marker} {self.n}"


@attrs.frozen(cache_hash=True, repr=False)
class Stride(_Postfix):
    """`E / n`: every n-th position of E."""

    marker = "/"

    def __attrs_post_init__(self) -> None:
        _int(self.n, "stride")
        if self.n == 0:
            raise MappingError("zero_divisor", f"stride by zero in `{self.operand} / 0`")
        if self.n < 0 or self.operand.size % self.n:
            raise MappingError(
                "stride_not_divisible",
                f"`/ {self.n}` needs a divisor of the operand size {self.operand.size}")
        _deeper(self, self.operand)
        object.__setattr__(self, "size", self.operand.size // self.n)


@attrs.frozen(cache_hash=True, repr=False)
class Modulo(_Postfix):
    """`E % n`: the first n positions of E; n must divide |E|."""

    marker = "%"

    def __attrs_post_init__(self) -> None:
        _deeper(self, self.operand)
        _int(self.n, "modulus")
        if self.n == 0:
            raise MappingError("zero_divisor", f"modulo by zero in `{self.operand} % 0`")
        if self.n < 0 or self.operand.size % self.n:
            raise MappingError(
                "modulo_not_divisible",
                f"`% {self.n}` needs a divisor of the operand size {self.operand.size}")
        object.__setattr__(self, "size", self.n)


@attrs.frozen(cache_hash=True, repr=False)
class Resize(_Postfix):
    """`E = n`: the first n positions of E; n may be any size from 1 to |E|."""

    marker = "="

    def __attrs_post_init__(self) -> None:
        _deeper(self, self.operand)
        _int(self.n, "resize")
        if self.n < 1:
            raise MappingError("zero_size", f"`= {self.n}` would leave no position; sizes must be >= 1")
        if self.n > self.operand.size:
            raise MappingError(
                "resize_too_large",
                f"`= {self.n}` is larger than the operand size {self.operand.size}; use `#` to pad")
        object.__setattr__(self, "size", self.n)


@attrs.frozen(cache_hash=True, repr=False)
class Pad(_Postfix):
    """`E # n` / `E #{0} n` / `E #{!} n`: the positions of E, then n - |E| padding positions."""

    kind: PaddingKind = PaddingKind.TOP

    def __attrs_post_init__(self) -> None:
        _deeper(self, self.operand)
        _int(self.n, "padded size")
        if not isinstance(self.kind, PaddingKind):
            raise MappingError("syntax", f"padding kind must be a PaddingKind, not {self.kind!r}")
        if self.n < self.operand.size:
            raise MappingError(
                "padding_too_small",
                f"`{self.kind.marker} {self.n}` is smaller than the operand size {self.operand.size}")
        object.__setattr__(self, "size", self.n)

    def text(self) -> str:
        return f"{self.operand._operand_text()} {self.kind.marker} {self.n}"


@attrs.frozen(cache_hash=True, repr=False)
class Pair(Mapping):
    """`L, R`: L is major; the partial indices of both are added."""

    left: Mapping
    right: Mapping

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.left, Mapping) or not isinstance(self.right, Mapping):
            raise MappingError("syntax", "both sides of a pair must be mappings")
        _deeper(self, self.left, self.right)
        object.__setattr__(self, "size", self.left.size * self.right.size)

    def children(self) -> tuple[Mapping, ...]:
        return (self.left, self.right)

    def flatten(self) -> list[Mapping]:
        """The items of the pair chain, right-nested pairs unrolled."""
        items: list[Mapping] = []
        node: Mapping = self
        while isinstance(node, Pair):
            items.extend(pair_items(node.left))
            node = node.right
        items.append(node)
        return items

    def text(self) -> str:
        return "(" + ", ".join(item.text() for item in self.flatten()) + ")"


IDENTITY = Broadcast(1)


def pair_all(items: list[Mapping] | tuple[Mapping, ...]) -> Mapping:
    """Right-nested pair of a list (`a, (b, (c, ...))`); the identity for an empty list."""
    if not items:
        return IDENTITY
    out = items[-1]
    for item in reversed(items[:-1]):
        out = Pair(item, out)
    return out


def pair_items(mapping: Mapping) -> list[Mapping]:
    """The items of a pair chain (`Pair.flatten`); a mapping that is no pair is one item."""
    return mapping.flatten() if isinstance(mapping, Pair) else [mapping]


def tree_nodes(*mappings: Mapping) -> Iterator[Mapping]:
    """Every node of the mappings' trees, each node before its children (walked without recursion)."""
    stack = list(mappings)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children())


def axis_sizes(*mappings: Mapping) -> dict[str, int]:
    """Declared size of every axis named anywhere in the mappings' trees."""
    return {node.name: node.axis_size for node in tree_nodes(*mappings) if isinstance(node, Symbol)}


def written(mapping: Mapping | str) -> str:
    """A mapping's text as a kernel author writes it inside `m("...")`: a pair without its
    outer parentheses (`A, B / 32`, not `(A, B / 32)`), anything else as its text. The
    help of a diagnostic and the editor's quick fix show mappings this way (issue 58)."""
    text = mapping if isinstance(mapping, str) else mapping.text()
    if not text.startswith("("):
        return text
    depth = 0
    for at, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return text[1:-1] if at == len(text) - 1 else text
    return text
