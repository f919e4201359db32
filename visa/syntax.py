"""Turn lark's `UnexpectedInput` on a VISA text into a `VisaTextError` a person can act on.

The common mistakes get their own message: a truncated file, an unterminated string, a
malformed `%n`, a record missing its `: <in> -> <out>` types, an unknown type kind,
`key = value` items in the wrong place; anything else names the token found and the
tokens the grammar expected there.
"""

from __future__ import annotations

from typing import Any

import lark
from lark.lexer import PatternStr

from visa.artifact import VisaTextError

__all__ = ["syntax_error", "end_position"]

# Human names of the grammar's named terminals.
_NAMES = {
    "_NL": "end of line", "INT": "an integer", "ENTRY": "a loop entry such as `4:1`",
    "VALUE": "a value `%n`", "STRING": "a quoted string", "UNAME": "an upper-case name",
    "LNAME": "a lower-case name", "LOC": "a `; loc` comment", "TYPE_KIND": "a type (hbm, dm, trf, stream, cstream, vrf, spm)",
    "$END": "end of file",
}


def end_position(text: str) -> tuple[int, int]:
    """(line, column) just past the last character of `text`."""
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


def _terminal(name: str, parser: lark.Lark) -> str:
    if name in _NAMES:
        return _NAMES[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name
    return f"`{pattern.value}`" if isinstance(pattern, PatternStr) else name


def _expected(names: Any, parser: lark.Lark) -> str:
    shown = sorted({_terminal(n, parser) for n in names if not n.startswith("__IGNORE")})
    if not shown:
        return ""
    return "; expected " + (shown[0] if len(shown) == 1 else "one of " + ", ".join(shown))


def _found(token: Any) -> str:
    if token.type == "_NL":
        return "end of line"
    return f"`{token}`" if str(token) else token.type


def _token_message(text: str, e: lark.exceptions.UnexpectedToken, parser: lark.Lark) -> tuple[str, int, int]:
    tok, expected = e.token, set(e.expected)
    line, col = (tok.line, tok.column) if tok.type != "$END" else end_position(text)
    if tok.type == "$END":
        return "unexpected end of file (the text is truncated?)" + _expected(expected, parser), line, col
    if "TYPE_KIND" in expected and tok.type in ("LNAME", "UNAME"):
        return f"unknown type kind `{tok}`; expected hbm, dm, trf, stream, cstream or scalar", line, col
    if {"COLON", "LNAME"} <= expected and tok.type in ("_NL", "LOC"):
        return "a record ends with its types: `: <input type> -> <output type>`", line, col
    if "__ANON_0" in expected and tok.type in ("_NL", "LOC"):
        return "missing `-> <output type>` after the input type", line, col
    if "EQUAL" in expected and tok.type != "EQUAL":
        return f"expected `=` after the name, found {_found(tok)}", line, col
    if tok.type == "INT" and "VALUE" in expected:
        return f"a value is written `%{tok}`, not `{tok}`", line, col
    return f"unexpected {_found(tok)}" + _expected(expected, parser), line, col


def _char_message(text: str, e: lark.exceptions.UnexpectedCharacters, parser: lark.Lark) -> str:
    pos = e.pos_in_stream
    ch = text[pos] if 0 <= pos < len(text) else ""
    if ch == '"':
        at_end = "\n" not in text[pos:]
        return "unterminated string" + (" at the end of the file (the text is truncated?)" if at_end
                                        else " (a string ends with `\"` on the same line)")
    if ch == "%":
        return "a value reference is `%` followed by digits, such as `%3`"
    if ch == "-" and text[pos:pos + 2] != "->":
        return "a negative number is written `-` followed by digits, without spaces"
    allowed = getattr(e, "allowed", None) or ()
    return f"unexpected character {ch!r}" + _expected(allowed, parser)


def syntax_error(text: str, e: lark.exceptions.UnexpectedInput, parser: lark.Lark) -> VisaTextError:
    """The positioned VisaTextError for a lark parse failure on `text`."""
    if isinstance(e, lark.exceptions.UnexpectedToken):
        msg, line, col = _token_message(text, e, parser)
        return VisaTextError(msg, line=line, column=col, source=text)
    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        return VisaTextError(_char_message(text, e, parser), line=e.line, column=e.column, source=text)
    line, col = end_position(text)
    expected = _expected(getattr(e, "expected", ()) or (), parser)
    return VisaTextError("unexpected end of file (the text is truncated?)" + expected, line=line, column=col,
                         source=text)
