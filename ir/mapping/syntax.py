"""Mapping texts to syntax trees: the limits checked on the raw text, lark's LALR parse
(`mapping.lark`, built once, lazily, its tables cached by ir/lark_cache.py) and the plain tree
(`Tree`, `Token`: rule or terminal, children, column) the builder (ir/mapping/parser.py) reads.

Plain trees are kept across processes in the `mappings` bundle (ir/kept_bundle.py): a kernel
whose texts were all parsed before, by any process, starts without importing lark (about a
tenth of a compile's start-up, issue 38 item 6).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ir.errors import MappingError
from ir.kept_bundle import bundle, text_key
from ir.lark_cache import lalr_parser

if TYPE_CHECKING:
    import lark

__all__ = ["MAX_DEPTH", "MAX_LITERAL", "MAX_TEXT", "MAX_ESCAPE_NESTING", "Tree", "Token", "syntax_tree",
           "plain_tree"]


# next to this module (importlib.resources would load zipfile and tempfile for it); its
# tables are shipped beside it (`mapping.lalr`, driver/lark_tables.py)
GRAMMAR_FILE = Path(__file__).with_name("mapping.lark")


@functools.cache
def _grammar() -> str:
    return GRAMMAR_FILE.read_text(encoding="utf-8")


OPTIONS = dict(start=["mapping_expr", "index_expr", "axes_decl"], propagate_positions=True,
               maybe_placeholders=False)


@functools.cache
def _parser() -> lark.Lark:
    return lalr_parser(GRAMMAR_FILE, **OPTIONS)


@functools.cache
def _salt() -> str:
    """What a kept tree depends on: the grammar, lark's options and the depth limit it passed."""
    return f"{_grammar()}|{sorted(OPTIONS.items())}|{MAX_DEPTH}"


@functools.lru_cache(maxsize=4096)
def syntax_tree(text: str, start: str) -> Tree:
    """Parse (cached by text, in the process and in the `mappings` bundle); lark errors become
    MappingError('syntax'), texts beyond the limits MappingError('limit')."""
    _check_limits(text)
    if start == "mapping_expr":
        _check_lists(text)
    kept = bundle("mappings", _salt(), _is_frozen)
    key = text_key(f"{start}\n{text}")
    frozen = kept.get(key)
    if frozen is None:
        frozen = _frozen(_parsed(text, start))
        kept.add(key, frozen)
    return _thaw(frozen)


def _parsed(text: str, start: str) -> lark.Tree:
    """lark's tree of `text`, within the depth limit."""
    import lark  # only for a text no process has parsed before (the bundle keeps the others)

    try:
        tree = _parser().parse(text, start=start)
    except lark.exceptions.UnexpectedInput as e:
        raise _syntax_error(text, e, lark.exceptions) from None
    _check_depth(text, tree)
    return tree


class Tree:
    """A node of a parse tree: its rule's name, its children and the column it starts at."""

    __slots__ = ("data", "children", "column")

    def __init__(self, data: str, children: list[Any], column: int) -> None:
        self.data, self.children, self.column = data, children, column


class Token(str):
    """A token of a parse tree: its text, with its terminal's name and its column."""

    type: str
    column: int


# A plain tree as marshal keeps it: a node is (rule, column, (children...)), a token
# (terminal, column, text).
def _frozen(t: Any) -> tuple:
    if hasattr(t, "children"):  # a lark Tree; an embedded grammar's rules carry a `mapping__` prefix
        return (t.data.removeprefix("mapping__"), _lark_column(t), tuple(_frozen(c) for c in t.children))
    return (t.type, _lark_column(t), str(t))


def _thaw(frozen: tuple) -> Any:
    name, column, rest = frozen
    if type(rest) is tuple:
        return Tree(name, [_thaw(c) for c in rest], column)
    tok = Token(rest)
    tok.type, tok.column = name, column
    return tok


def _is_frozen(value: Any) -> bool:
    return type(value) is tuple and len(value) == 3


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
    """The depth of the mapping tree the builder would make, walked without recursion (on
    lark's tree, before the recursive `_frozen` copies it)."""
    stack: list[tuple[Any, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise MappingError("limit", f"the mapping nests deeper than {MAX_DEPTH} levels (brackets, "
                                        f"operators in a row and comma items count)", text=text,
                               column=_lark_column(node))
        if hasattr(node, "children"):
            step = node.data == "mapping"
            stack.extend((c, depth + 1 + (i if step else 0)) for i, c in enumerate(node.children))


def _syntax_error(text: str, e: lark.exceptions.UnexpectedInput, errors: Any) -> MappingError:
    """The MappingError of lark's error `e` (`errors`: the module `lark.exceptions`)."""
    pos = getattr(e, "pos_in_stream", None)
    column = pos + 1 if isinstance(pos, int) and pos >= 0 else -1  # on the text as shown, newlines too
    token = getattr(e, "token", None)
    at_end = isinstance(e, errors.UnexpectedEOF) or getattr(token, "type", "") == "$END"
    if at_end or not isinstance(column, int) or column < 1:
        column = len(text) + 1
    if isinstance(e, errors.UnexpectedCharacters):
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


def plain_tree(tree: lark.Tree) -> Tree:
    """A lark tree of this grammar (or of another embedding it) as plain nodes."""
    return _thaw(_frozen(tree))


def _lark_column(t: lark.Tree | lark.Token) -> int:
    """The 1-based column of a node of lark's tree (a caret is drawn under the text on one line)."""
    if not hasattr(t, "children"):
        return (t.start_pos + 1) if t.start_pos is not None else (t.column or 1)
    meta = getattr(t, "meta", None)
    if meta is not None and not meta.empty:
        return meta.start_pos + 1
    return 1
