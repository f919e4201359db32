"""Parse mapping texts (docs/mapping-language.md) into trees, with columns on every error.

A text becomes a plain syntax tree (ir/mapping/syntax.py: limits, lark, the trees kept across
processes). A small recursive builder turns that tree into `Mapping` nodes, resolving symbols against an axis table and
escapes against an environment; any MappingError it meets gets the column of the token
that caused it, so the message can put a caret under the fault.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ir.errors import MappingError
from ir.mapping.syntax import MAX_DEPTH, MAX_ESCAPE_NESTING, MAX_LITERAL, Token, Tree, plain_tree, syntax_tree
from ir.mapping.nodes import Broadcast, Mapping, Modulo, Pad, PaddingKind, Resize, Stride, Symbol, pair_all

if TYPE_CHECKING:
    import lark

__all__ = ["parse_mapping", "parse_index_items", "parse_axes_decl", "mapping_from_tree", "Env"]

# An escape environment: name -> Mapping | str | int (or a callable doing the lookup).
Env = Callable[[str], Any]

_FILL_KINDS = {"*": PaddingKind.TOP, "0": PaddingKind.ZERO, "!": PaddingKind.BOTTOM}
MISSING = object()


def _relocate(err: MappingError, text: str, column: int) -> MappingError:
    """The same error with the text and a column attached (innermost column wins)."""
    if err.text is not None and err.column is not None:
        return err
    return MappingError(err.category, err.detail, text=text, column=column)


class _Builder:
    """Builds nodes from a plain parse tree for one text."""

    def __init__(self, text: str, axes: dict[str, int], env: Env, expanding: tuple[str, ...] = (),
                 level: int = 0) -> None:
        self.text = text
        self.axes = axes
        self.env = env
        self.expanding = expanding  # the escape names being expanded around this text, outer first
        self.level = level  # builder recursion so far, escapes included (bounded by _MAX_LEVEL)

    def fail(self, category: str, message: str, column: int) -> MappingError:
        return MappingError(category, message, text=self.text, column=column)

    def build(self, tree: Tree | Token) -> Mapping:
        self.level += 1
        try:
            if self.level > _MAX_LEVEL:
                raise self.fail("limit", f"escapes nest the text deeper than {_MAX_LEVEL} levels", tree.column)
            return self._build(tree)
        except MappingError as e:
            raise _relocate(e, self.text, tree.column) from None
        finally:
            self.level -= 1

    def _build(self, t: Tree | Token) -> Mapping:
        kind = t.data
        if kind in ("mapping_expr",):
            return self.build(t.children[0])
        if kind == "mapping":
            return pair_all([self.build(c) for c in t.children])
        if kind == "symbol":
            return self.symbol(t.children[0])
        if kind == "broadcast":
            return Broadcast(int(t.children[0]))
        if kind == "escaped_mapping":
            return self.escaped_mapping(t.children[0])
        operand = self.build(t.children[0])
        if kind == "pad_fill":
            marker = t.children[1]
            fill = marker.strip("#{}").strip().strip("{}").strip()  # any whitespace, unicode too
            return self._apply(Pad, operand, t.children[2], _FILL_KINDS[fill])
        ops = {"stride": Stride, "modulo": Modulo, "resize": Resize}
        if kind in ops:
            return self._apply(ops[kind], operand, t.children[1])
        if kind == "pad_top":
            return self._apply(Pad, operand, t.children[1], PaddingKind.TOP)
        raise AssertionError(f"unknown node {kind}")  # grammar and builder out of sync

    def _apply(self, cls: type, operand: Mapping, num: Tree, *extra: object) -> Mapping:
        value = self.factor(num)
        try:
            return cls(operand, value, *extra)
        except MappingError as e:
            raise _relocate(e, self.text, num.column) from None

    def symbol(self, tok: Token) -> Mapping:
        name = str(tok)
        if name not in self.axes:
            known = ", ".join(sorted(self.axes)) or "none declared"
            raise self.fail("unknown_axis", f"unknown axis `{name}` (known axes: {known})", tok.column)
        return Symbol(name, self.axes[name])

    def lookup(self, tok: Token) -> tuple[str, Any]:
        name = str(tok)[1:-1].strip()
        value = self.env(name)
        if value is MISSING:
            raise self.fail("unknown_escape", f"unknown escape `{{{name}}}`", tok.column)
        return name, value

    def escaped_mapping(self, tok: Token) -> Mapping:
        name, value = self.lookup(tok)
        if isinstance(value, Mapping):
            return value
        if hasattr(value, "mapping") and isinstance(value.mapping, Mapping):  # an Axis
            return value.mapping
        if isinstance(value, str):
            if name in self.expanding:
                chain = " -> ".join(f"{{{n}}}" for n in self.expanding + (name,))
                raise self.fail("escape_type", f"escape `{{{name}}}` refers to itself ({chain})", tok.column)
            if len(self.expanding) >= MAX_ESCAPE_NESTING:
                raise self.fail("limit", f"escapes expand inside one another more than {MAX_ESCAPE_NESTING} "
                                         f"levels deep", tok.column)
            try:
                tree = syntax_tree(value, "mapping_expr")
                inner = _Builder(value, self.axes, self.env, self.expanding + (name,), self.level)
                return inner.build(tree)
            except MappingError as e:
                if "refers to itself" in e.detail or e.detail.startswith(("escapes expand", "escapes nest")):
                    raise self.fail(e.category, e.detail, tok.column) from None  # said once, not per level
                shown = value if len(value) <= 60 else value[:57] + "..."
                raise self.fail(e.category, f"in escape `{{{name}}}` = {shown!r}: {e.detail}",
                                tok.column) from None
        raise self.fail("escape_type",
                        f"escape `{{{name}}}` is {_kind(value)}, but a mapping is needed here",
                        tok.column)

    def factor(self, t: Tree) -> int:
        """An operator's argument: a number, an axis's size, or a bracketed count's size."""
        if t.data == "axis_count":
            return self.symbol(t.children[0]).size
        if t.data != "mapping_count":
            return self.number(t)
        count = self.build(t.children[0])
        if not _is_count(count):
            raise self.fail("factor_not_count",
                            f"`({count})` is not a count: an operator's argument in brackets is an axis, a "
                            f"number or a stride `E / n`, whose size is the count", t.column)
        if count.size >= MAX_LITERAL:
            raise self.fail("limit", f"`({count})` counts {count.size}: numbers in a mapping are below 2**48",
                            t.column)
        return count.size

    def number(self, num: Tree) -> int:
        tok = num.children[0]
        if num.data == "lit":
            return int(tok)
        inner = str(tok)[1:-1].strip()
        if inner.isascii() and inner.isdigit():
            return int(inner)
        name, value = self.lookup(tok)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            what = _kind(value) if not isinstance(value, int) else f"negative ({value})"
            hint = f"; to use its size write `({{{name}}})`" if isinstance(value, Mapping) else ""
            raise self.fail("escape_type",
                            f"escape `{{{name}}}` is {what}, but a non-negative integer is needed here{hint}",
                            tok.column)
        if value >= MAX_LITERAL:
            raise self.fail("limit", f"escape `{{{name}}}` is {value}: numbers in a mapping are below 2**48",
                            tok.column)
        return value


# The builder's recursion bound across nested escapes: twice the depth of one text, so a
# text and its escapes may each use the whole 64 levels, and far below Python's limit.
_MAX_LEVEL = 2 * MAX_DEPTH + 8


def _kind(value: Any) -> str:
    """What an escape's value is, for a message: `an int`, `a mapping (Stride)`."""
    if isinstance(value, Mapping):
        return f"a mapping ({type(value).__name__})"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _is_count(node: Mapping) -> bool:
    """Is `node` a count (furiosa-opt's `Count`): an axis, a number, or a stride `E / n`?
    A pair is a shape and the other operators only repeat the number they were given."""
    return isinstance(node, (Symbol, Broadcast, Stride))


def _no_env(name: str) -> Any:
    return MISSING


def parse_mapping(text: str, axes: dict[str, int], env: Env = _no_env) -> Mapping:
    """Parse a mapping text against an axis table and an escape environment."""
    if not isinstance(text, str):
        raise MappingError("syntax", f"a mapping text must be a str, not {type(text).__name__}")
    tree = syntax_tree(text, "mapping_expr")
    return _Builder(text, axes, env).build(tree)


def mapping_from_tree(tree: lark.Tree, axes: dict[str, int], text: str = "") -> Mapping:
    """The mapping of a parse tree of this grammar's `item` rule embedded in another lark
    grammar (its rule names carry the `mapping__` prefix of a lark %import)."""
    return _Builder(text, axes, _no_env).build(plain_tree(tree))


def parse_index_items(text: str, axes: dict[str, int], env: Env = _no_env) -> list[tuple[Mapping, int]]:
    """Parse an index literal into its `(mapping, value)` assignments, in order."""
    if not isinstance(text, str):
        raise MappingError("syntax", f"an index text must be a str, not {type(text).__name__}")
    tree = syntax_tree(text, "index_expr")
    builder = _Builder(text, axes, env)
    return [(builder.build(a.children[0]), builder.number(a.children[1])) for a in tree.children]


def parse_axes_decl(text: str) -> list[tuple[str, int, int]]:
    """Parse `A = 8, B = 4` into `(name, size, column)` triples (no validation of sizes)."""
    tree = syntax_tree(text, "axes_decl")
    return [(str(d.children[0]), int(d.children[1]), d.children[0].column) for d in tree.children]

