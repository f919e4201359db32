"""Diagnostics, hovers and inlay hints from a file's facts (driver/lsp/facts.py).

Pure functions of the facts and the document's lines: no user code runs here.
"""

from __future__ import annotations

import contextlib
import io
import re
import tokenize
from typing import Any

from lsprotocol import types as lsp

from driver.explain import page
from driver.lsp.pages import code_link
from driver.lsp.positions import line_text, py_col, utf16_col

__all__ = ["to_diagnostics", "abroad", "hover", "inlay_hints", "rule_title", "RULE_ID"]

RULE_ID = re.compile(r"\b(?:W-)?[A-Z][A-Z0-9]*-(?:[0-9]+|[a-z_]+)\b|\bUSAGE\b|\bICE\b")
_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning}


def _range(lines: list[str], fact: dict[str, Any]) -> lsp.Range:
    line0 = max(0, (fact.get("line") or 1) - 1)
    text = line_text(lines, line0)
    if not fact.get("col"):  # no column: the line's code
        start = len(text) - len(text.lstrip())
        return lsp.Range(lsp.Position(line0, utf16_col(text, len(text[:start].encode()))),
                         lsp.Position(line0, utf16_col(text, len(text.encode()))))
    start = fact["col"] - 1
    end = start + max(1, fact.get("length") or 1)
    return lsp.Range(lsp.Position(line0, utf16_col(text, start)), lsp.Position(line0, utf16_col(text, end)))


def to_diagnostics(facts: dict[str, Any], lines: list[str], uri: str, guide: str | None) -> list[lsp.Diagnostic]:
    """Every diagnostic of the facts, as LSP diagnostics of the document `uri`."""
    out = []
    for d in facts.get("diagnostics", []):
        where = _range(lines, d)
        related = [lsp.DiagnosticRelatedInformation(lsp.Location(r["uri"], lsp.Range(
            lsp.Position(r["line0"], r["start"]), lsp.Position(r["line0"], r["end"]))), r["message"])
            for r in d.get("related", [])]
        related += [lsp.DiagnosticRelatedInformation(lsp.Location(uri, where), f"help: {d['help']}")] \
            if d.get("help") else []
        related += [lsp.DiagnosticRelatedInformation(lsp.Location(uri, where), f"note: {n}")
                    for n in d.get("notes", []) if not n.startswith("in stage `")]
        out.append(lsp.Diagnostic(
            range=where, message=d["message"], severity=_SEVERITY.get(d.get("severity"), lsp.DiagnosticSeverity.Error),
            code=d["code"], code_description=_description(d["code"], guide),
            source="npu-opt", related_information=related or None,
            data={"help": d.get("help"), "stage": d.get("stage")}))
    return out


def _description(code: str, guide: str | None) -> lsp.CodeDescription | None:
    link = code_link(code, guide)
    return lsp.CodeDescription(href=link) if link else None


def abroad(facts: dict[str, Any], uri: str, lines: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The records of `facts` raised in other files (a helper module's refusals), by that
    file's path, each at its own place there with the call in `uri` as related information."""
    out: dict[str, list[dict[str, Any]]] = {}
    for d in facts.get("diagnostics", []):
        origin = d.get("origin")
        if not origin:
            continue
        call = _range(lines, d)
        name = uri.rsplit("/", 1)[-1]
        out.setdefault(origin["path"], []).append(dict(
            d, line=origin["line"], col=origin["col"], length=origin["length"], origin=None,
            related=[{"uri": uri, "line0": call.start.line, "start": call.start.character, "end": call.end.character,
                      "message": f"called from here, in {name}:{d['line']}"}]))
    return out


def _inside(lines: list[str], pos: lsp.Position, fact: dict[str, Any], end_key: str | None = None) -> bool:
    """Whether `pos` is within the fact's span (one line of `length`, or up to `end_line`/`end_col`)."""
    text = line_text(lines, pos.line)
    col = py_col(text, pos.character) + 1
    if end_key is None:
        return pos.line + 1 == fact["line"] and fact["col"] <= col < fact["col"] + max(1, fact["length"])
    start, end = (fact["line"], fact["col"]), (fact["end_line"], fact["end_col"])
    return start <= (pos.line + 1, col) < end


def rule_title(code: str) -> str | None:
    """The title of the explain page of `code`, or None when there is no such page."""
    found = page(code)
    return found.title if found is not None and found.title else None


def _rule_hover(lines: list[str], pos: lsp.Position) -> str | None:
    """A rule ID under the cursor in a comment or a string: its title."""
    text = line_text(lines, pos.line)
    col = len(text.encode("utf-16-le")[:pos.character * 2].decode("utf-16-le", errors="ignore"))
    for match in RULE_ID.finditer(text):
        if match.start() <= col < match.end() and _in_comment_or_string(text, match.start()):
            title = rule_title(match.group())
            if title:
                return f"**{match.group()}**: {title}\n\n`npu-opt explain {match.group()}`"
    return None


def _in_comment_or_string(text: str, index: int) -> bool:
    quote, i = None, 0
    while i < index:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#":
            return True
        i += 1
    return quote is not None


def hover(facts: dict[str, Any], lines: list[str], pos: lsp.Position) -> lsp.Hover | None:
    """The stage's stream type, the mapping's parse, the tensor's sizes, or the rule's title."""
    text = None
    for fact in facts.get("stages", []):
        if _inside(lines, pos, fact):
            text = fact["hover"]
    for key in ("mappings", "tensors", "variables"):
        if text is None:
            found = [f for f in facts.get(key, []) if _inside(lines, pos, f, "end")]
            text = found[-1]["hover"] if found else None  # the innermost (ast.walk is outermost first)
    text = text or _rule_hover(lines, pos)
    if text is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text))


def _comment_starts(lines: list[str]) -> dict[int, int]:
    """line0 -> character index where the line's comment starts."""
    found: dict[int, int] = {}
    with contextlib.suppress(tokenize.TokenError, SyntaxError, IndentationError):
        for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            if tok.type == tokenize.COMMENT:
                found[tok.start[0] - 1] = tok.start[1]
    return found


def inlay_hints(facts: dict[str, Any], lines: list[str], first: int = 0, last: int | None = None) -> list[lsp.InlayHint]:
    """The type after the last stage call of each line (lines `first`..`last`, 0-based), at
    the end of the line's code. The facts are in trace order, so the last of a line is the
    call that ran last: `begin` in `ctx.main.begin(d.view())`, not the `view` inside it."""
    last_fact: dict[int, dict[str, Any]] = {}
    for fact in facts.get("stages", []):
        last_fact[fact["line"] - 1] = fact
    comments = _comment_starts(lines) if last_fact else {}
    hints = []
    for line0, fact in sorted(last_fact.items()):
        if line0 < first or (last is not None and line0 > last):
            continue
        text = line_text(lines, line0)
        code = text[:comments.get(line0, len(text))].rstrip()
        hints.append(lsp.InlayHint(position=lsp.Position(line0, len(code.encode("utf-16-le")) // 2),
                                   label=f": {fact['type']}", kind=lsp.InlayHintKind.Type, padding_left=True,
                                   tooltip=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=fact["hover"])))
    return hints
