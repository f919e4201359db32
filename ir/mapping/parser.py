"""Parse mapping texts (docs/mapping-language.md) into trees, with columns on every error.

The lark grammar (`mapping.lark`, LALR) is built once, lazily. A small recursive builder
turns the parse tree into `Mapping` nodes, resolving symbols against an axis table and
escapes against an environment; any MappingError it meets gets the column of the token
that caused it, so the message can put a caret under the fault.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lark

from ir.errors import MappingError
from ir.lark_cache import lalr_parser
from ir.mapping.nodes import (
    Broadcast, Mapping, Modulo, Pad, PaddingKind, Pair, Resize, Stride, Symbol,
)

__all__ = ["parse_mapping", "parse_index_items", "parse_axes_decl", "mapping_from_tree", "Env"]

# An escape environment: name -> Mapping | str | int (or a callable doing the lookup).
Env = Callable[[str], Any]

_FILL_KINDS = {"*": PaddingKind.TOP, "0": PaddingKind.ZERO, "!": PaddingKind.BOTTOM}
_MISSING = object()


@functools.cache
def _parser() -> lark.Lark:
    # next to this module (importlib.resources would load zipfile and tempfile for it)
    grammar = Path(__file__).with_name("mapping.lark").read_text(encoding="utf-8")
    return lalr_parser(grammar, start=["mapping_expr", "index_expr", "axes_decl"],
                       propagate_positions=True, maybe_placeholders=False)


@functools.lru_cache(maxsize=4096)
def _syntax_tree(text: str, start: str) -> lark.Tree:
    """Parse (cached by text); lark errors become MappingError('syntax'), texts beyond
    the limits MappingError('limit')."""
    _check_limits(text)
    if start == "mapping_expr":
        _check_lists(text)
    try:
        tree = _parser().parse(text, start=start)
    except lark.exceptions.UnexpectedInput as e:
        raise _syntax_error(text, e) from None
    _check_depth(text, tree)
    return tree


# The documented limits of a mapping text (page MAP-limit): nesting depth (brackets,
# postfix operators applied in a row and comma items, which nest as pairs) and the value
# of an integer literal. Real mappings stay far below both; beyond them every tree walk
# would risk Python's recursion limit and every size its integer arithmetic.
MAX_DEPTH = 64
MAX_LITERAL = 2 ** 48
# The longest text parsed at all: a 64-deep mapping of sensible names fits many times over,
# and the check runs before lark, so a megabyte of text is refused in microseconds.
MAX_TEXT = 16384
# How many escapes may expand inside one another ({L} naming a text holding {M} ...).
MAX_ESCAPE_NESTING = 8
_LITERAL = re.compile(r"(?<![A-Za-z0-9_])[0-9]+")


def _check_limits(text: str) -> None:
    """Length, literals and bracket depth, on the raw text (before lark builds a tree)."""
    if len(text) > MAX_TEXT:
        raise MappingError("limit", f"the text has {len(text)} characters; mapping texts are at most {MAX_TEXT}",
                           text=text[:60] + "...", column=61)  # the caret under "...": it goes on from there
    for match in _LITERAL.finditer(text):
        digits = match.group()
        if len(digits) > 15 or int(digits) >= MAX_LITERAL:
            shown = digits if len(digits) <= 20 else f"{digits[:8]}...({len(digits)} digits)"
            raise MappingError("limit", f"integer literal {shown} is too large: literals are below 2**48",
                               text=text, column=match.start() + 1)
    depth = 0
    for pos, ch in enumerate(text):
        depth += (ch in "([") - (ch in ")]")
        if depth > MAX_DEPTH:
            raise MappingError("limit", f"brackets nest deeper than {MAX_DEPTH} levels", text=text, column=pos + 1)


def _check_lists(text: str) -> None:
    """Comma lists and operator chains, before lark parses them: a list's items nest as pairs
    and each postfix operator is a level, so more than MAX_DEPTH commas in one list or
    operators on one item is over the depth limit whatever else the text holds. Saying so
    here spares parsing thousands of items only for the tree check to refuse them."""
    commas, ops, brace = [0], [0], False
    for pos, ch in enumerate(text):
        if brace:
            brace = ch != "}"
        elif ch == "{":
            brace = True
        elif ch in "([":
            commas.append(0)
            ops.append(0)
        elif ch in ")]" and len(commas) > 1:
            commas.pop()
            ops.pop()
        elif ch == ",":
            commas[-1] += 1
            ops[-1] = 0
            if commas[-1] > MAX_DEPTH:
                raise MappingError("limit", f"a comma list holds more than {MAX_DEPTH} items; items nest as "
                                            f"pairs, at most {MAX_DEPTH} levels deep", text=text, column=pos + 1)
        elif ch in "/%=#":
            ops[-1] += 1
            if ops[-1] > MAX_DEPTH:
                raise MappingError("limit", f"more than {MAX_DEPTH} operators apply to one item; each is a "
                                            f"level, at most {MAX_DEPTH} deep", text=text, column=pos + 1)


def _check_depth(text: str, tree: lark.Tree) -> None:
    """The depth of the mapping tree the builder would make, walked without recursion."""
    stack: list[tuple[Any, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise MappingError("limit", f"the mapping nests deeper than {MAX_DEPTH} levels (brackets, "
                                        f"operators in a row and comma items count)", text=text,
                               column=_column(node))
        if isinstance(node, lark.Tree):
            step = node.data == "mapping"
            stack.extend((c, depth + 1 + (i if step else 0)) for i, c in enumerate(node.children))


def _syntax_error(text: str, e: lark.exceptions.UnexpectedInput) -> MappingError:
    pos = getattr(e, "pos_in_stream", None)
    column = pos + 1 if isinstance(pos, int) and pos >= 0 else -1  # on the text as shown, newlines too
    token = getattr(e, "token", None)
    at_end = isinstance(e, lark.exceptions.UnexpectedEOF) or getattr(token, "type", "") == "$END"
    if at_end or not isinstance(column, int) or column < 1:
        column = len(text) + 1
    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        ch = text[e.pos_in_stream] if 0 <= e.pos_in_stream < len(text) else "?"
        what = f"unexpected character {ch!r}"
        if ch == "_" or (ch.isalpha() and not ch.isascii()):
            what += " (axis names are ASCII letters, digits and `_`, a letter first)"
    elif at_end:
        what = "unexpected end of expression" if text.strip() else "empty expression"
    else:
        what = f"unexpected `{token!s:.20}`"
        expected = sorted(set(getattr(e, "expected", None) or ()) - {"COLON"})
        if 0 < len(expected) <= 3:  # LALR states are shared, so long lists mislead
            what += f" (expected one of: {', '.join(_TOKEN_NAMES.get(x, x) for x in expected)})"
    return MappingError("syntax", f"syntax error in mapping: {what}", text=text, column=column)


_TOKEN_NAMES = {
    "SYMBOL": "an axis name", "NUMBER": "a number", "ESCAPE": "an escape {...}", "COMMA": "`,`",
    "LPAR": "`(`", "RPAR": "`)`", "LSQB": "`[`", "RSQB": "`]`", "SLASH": "`/`", "PERCENT": "`%`",
    "EQUAL": "`=`", "HASH": "`#`", "FILL": "a fill `#{0}`", "COLON": "`:`",
}


def _relocate(err: MappingError, text: str, column: int) -> MappingError:
    """The same error with the text and a column attached (innermost column wins)."""
    if err.text is not None and err.column is not None:
        return err
    return MappingError(err.category, err.detail, text=text, column=column)


class _Builder:
    """Builds nodes from a lark tree for one text."""

    def __init__(self, text: str, axes: dict[str, int], env: Env, expanding: tuple[str, ...] = (),
                 level: int = 0) -> None:
        self.text = text
        self.axes = axes
        self.env = env
        self.expanding = expanding  # the escape names being expanded around this text, outer first
        self.level = level  # builder recursion so far, escapes included (bounded by _MAX_LEVEL)

    def fail(self, category: str, message: str, column: int) -> MappingError:
        return MappingError(category, message, text=self.text, column=column)

    def build(self, tree: lark.Tree | lark.Token) -> Mapping:
        self.level += 1
        try:
            if self.level > _MAX_LEVEL:
                raise self.fail("limit", f"escapes nest the text deeper than {_MAX_LEVEL} levels", _column(tree))
            return self._build(tree)
        except MappingError as e:
            raise _relocate(e, self.text, _column(tree)) from None
        finally:
            self.level -= 1

    def _build(self, t: lark.Tree | lark.Token) -> Mapping:
        kind = t.data
        if kind in ("mapping_expr",):
            return self.build(t.children[0])
        if kind == "mapping":
            items = [self.build(c) for c in t.children]
            out = items[-1]
            for item in reversed(items[:-1]):
                out = Pair(item, out)
            return out
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

    def _apply(self, cls: type, operand: Mapping, num: lark.Tree, *extra: object) -> Mapping:
        value = self.factor(num)
        try:
            return cls(operand, value, *extra)
        except MappingError as e:
            raise _relocate(e, self.text, _column(num)) from None

    def symbol(self, tok: lark.Token) -> Mapping:
        name = str(tok)
        if name not in self.axes:
            known = ", ".join(sorted(self.axes)) or "none declared"
            raise self.fail("unknown_axis", f"unknown axis `{name}` (known axes: {known})", _column(tok))
        return Symbol(name, self.axes[name])

    def lookup(self, tok: lark.Token) -> tuple[str, Any]:
        name = str(tok)[1:-1].strip()
        value = self.env(name)
        if value is _MISSING:
            raise self.fail("unknown_escape", f"unknown escape `{{{name}}}`", _column(tok))
        return name, value

    def escaped_mapping(self, tok: lark.Token) -> Mapping:
        name, value = self.lookup(tok)
        if isinstance(value, Mapping):
            return value
        if hasattr(value, "mapping") and isinstance(value.mapping, Mapping):  # an Axis
            return value.mapping
        if isinstance(value, str):
            if name in self.expanding:
                chain = " -> ".join(f"{{{n}}}" for n in self.expanding + (name,))
                raise self.fail("escape_type", f"escape `{{{name}}}` refers to itself ({chain})", _column(tok))
            if len(self.expanding) >= MAX_ESCAPE_NESTING:
                raise self.fail("limit", f"escapes expand inside one another more than {MAX_ESCAPE_NESTING} "
                                         f"levels deep", _column(tok))
            try:
                tree = _syntax_tree(value, "mapping_expr")
                inner = _Builder(value, self.axes, self.env, self.expanding + (name,), self.level)
                return inner.build(tree)
            except MappingError as e:
                if "refers to itself" in e.detail or e.detail.startswith(("escapes expand", "escapes nest")):
                    raise self.fail(e.category, e.detail, _column(tok)) from None  # said once, not per level
                shown = value if len(value) <= 60 else value[:57] + "..."
                raise self.fail(e.category, f"in escape `{{{name}}}` = {shown!r}: {e.detail}",
                                _column(tok)) from None
        raise self.fail("escape_type",
                        f"escape `{{{name}}}` is {_kind(value)}, but a mapping is needed here",
                        _column(tok))

    def factor(self, t: lark.Tree) -> int:
        """An operator's argument: a number, an axis's size, or a bracketed count's size."""
        if t.data == "axis_count":
            return self.symbol(t.children[0]).size
        if t.data != "mapping_count":
            return self.number(t)
        count = self.build(t.children[0])
        if not _is_count(count):
            raise self.fail("factor_not_count",
                            f"`({count})` is not a count: an operator's argument in brackets is an axis, a "
                            f"number or a stride `E / n`, whose size is the count", _column(t))
        if count.size >= MAX_LITERAL:
            raise self.fail("limit", f"`({count})` counts {count.size}: numbers in a mapping are below 2**48",
                            _column(t))
        return count.size

    def number(self, num: lark.Tree) -> int:
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
                            _column(tok))
        if value >= MAX_LITERAL:
            raise self.fail("limit", f"escape `{{{name}}}` is {value}: numbers in a mapping are below 2**48",
                            _column(tok))
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


def _column(t: lark.Tree | lark.Token) -> int:
    """1-based offset in the whole text (a caret is drawn under the text on one line)."""
    if isinstance(t, lark.Token):
        return (t.start_pos + 1) if t.start_pos is not None else (t.column or 1)
    meta = getattr(t, "meta", None)
    if meta is not None and not meta.empty:
        return meta.start_pos + 1
    return 1


def _no_env(name: str) -> Any:
    return _MISSING


def parse_mapping(text: str, axes: dict[str, int], env: Env = _no_env) -> Mapping:
    """Parse a mapping text against an axis table and an escape environment."""
    if not isinstance(text, str):
        raise MappingError("syntax", f"a mapping text must be a str, not {type(text).__name__}")
    tree = _syntax_tree(text, "mapping_expr")
    return _Builder(text, axes, env).build(tree)


def mapping_from_tree(tree: lark.Tree, axes: dict[str, int], text: str = "") -> Mapping:
    """The mapping of a parse tree of this grammar's `item` rule embedded in another lark
    grammar (its rule names carry the `mapping__` prefix of a lark %import)."""
    for node in tree.iter_subtrees():
        node.data = node.data.removeprefix("mapping__")
    return _Builder(text, axes, _no_env).build(tree)


def parse_index_items(text: str, axes: dict[str, int], env: Env = _no_env) -> list[tuple[Mapping, int]]:
    """Parse an index literal into its `(mapping, value)` assignments, in order."""
    if not isinstance(text, str):
        raise MappingError("syntax", f"an index text must be a str, not {type(text).__name__}")
    tree = _syntax_tree(text, "index_expr")
    builder = _Builder(text, axes, env)
    return [(builder.build(a.children[0]), builder.number(a.children[1])) for a in tree.children]


def parse_axes_decl(text: str) -> list[tuple[str, int, int]]:
    """Parse `A = 8, B = 4` into `(name, size, column)` triples (no validation of sizes)."""
    tree = _syntax_tree(text, "axes_decl")
    return [(str(d.children[0]), int(d.children[1]), _column(d.children[0])) for d in tree.children]


MISSING = _MISSING
