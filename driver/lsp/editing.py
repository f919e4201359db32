"""Completion, signature help and quick fixes from a file's facts (driver/lsp/facts.py).

Completion after `stream.` offers the methods the stream's stage class offers (the list a
TYPE-1 note gives), each with the signature TYPE-6's help writes; after an enum's name
(`LaneMode.`, `FpBinaryOp.`) its variants. The receiver is found by scanning back from
the dot: `...)` is a call, and the method name before its `(` is a stage the last check
recorded at that line and column.

A quick fix is offered where a diagnostic's help is a concrete replacement: a call
`.name(args)` of the method the diagnostic points at (COLLECT-2's
`.collect(m("K / 16"), m("K % 16 # 32"))`, a `.sparse_prefix(n.cast(i32))`), or
`annotate `x` with Mut[...]` (PARAM-1), which wraps `x`'s annotation in `Mut[...]`.
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types as lsp

from driver.lsp.positions import offset, position_of

__all__ = ["completions", "signature_help", "code_actions"]

_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_LONGEST_NAME = 1000  # a name is looked for this far back at most: a long line costs no more than a short one
_LONGEST_CALL = 20_000  # how far back signature help looks for the call's `(`


class _Name:
    """A Python name that ends at a given index of the text (`start`, `end`, `group()`)."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text, self._start, self._end = text, start, end

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end

    def group(self) -> str:
        return self.text[self._start:self._end]


def _name_before(text: str, end: int) -> _Name | None:
    """The name that ends at index `end` of `text`, or None. (A regular expression anchored
    at the end, searched over the text before the cursor, cost the square of the length of
    a run of letters: seconds after a 10 KB line, issue 55.)"""
    start, floor = end, max(0, end - _LONGEST_NAME)
    while start > floor and text[start - 1] in _IDENT_CHARS:
        start -= 1
    while start < end and text[start].isdigit():
        start += 1
    return _Name(text, start, end) if start < end else None


def _skip_back_space(text: str, i: int) -> int:
    while i > 0 and text[i - 1] in " \t\r\n\\":
        i -= 1
    return i


def _matching(text: str, at: int, forward: bool = True) -> int | None:
    """The index of the parenthesis matching the one at `at`: scanning forward from a `(`,
    or backward from a `)` (quoted text skipped roughly)."""
    into, out_of = ("(", ")") if forward else (")", "(")
    depth, quote = 0, None
    for i in (range(at, len(text)) if forward else range(at, -1, -1)):
        c = text[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == into:
            depth += 1
        elif c == out_of:
            depth -= 1
            if depth == 0:
                return i
    return None


def _receiver_class(facts: dict[str, Any], text: str, lines: list[str], dot: int) -> str | None:
    """The stage class of the expression that ends just before the `.` at index `dot`."""
    end = _skip_back_space(text, dot)
    if end == 0 or text[end - 1] != ")":
        return None
    start = _matching(text, end - 1, forward=False)
    if start is None:
        return None
    name_end = _skip_back_space(text, start)
    name = _name_before(text, name_end)
    if name is None:
        return None
    line0, _ = position_of(lines, name.start())
    col = len(lines[line0][:name.start() - sum(len(x) + 1 for x in lines[:line0])].encode("utf-8")) + 1
    for fact in facts.get("stages", []):
        if fact["line"] == line0 + 1 and fact["col"] == col and fact["stage"] == name.group() and fact["class"]:
            return fact["class"]
    return None


def completions(facts: dict[str, Any], enums: dict[str, list[str]], lines: list[str],
                pos: lsp.Position) -> list[lsp.CompletionItem]:
    """The methods of the stream before the dot at `pos`, or an enum's variants."""
    text = "\n".join(lines)
    here = offset(lines, pos.line, pos.character)
    partial = _name_before(text, here)
    dot = here - (len(partial.group()) if partial else 0)
    if dot == 0 or text[dot - 1] != ".":
        return []
    owner = _name_before(text, dot - 1)
    if owner is not None and owner.group() in enums:
        return [lsp.CompletionItem(label=v, kind=lsp.CompletionItemKind.EnumMember, detail=owner.group())
                for v in enums[owner.group()]]
    cls = _receiver_class(facts, text, lines, dot - 1)
    if cls is None:
        return []
    return [lsp.CompletionItem(label=name, kind=lsp.CompletionItemKind.Method, detail=f"{name}{sig}",
                               documentation=f"offered by {cls}")
            for name, sig in facts.get("classes", {}).get(cls, {}).items()]


def _split_params(sig: str) -> list[str]:
    inner = sig.strip()[1:-1]
    out, depth, cur = [], 0, ""
    for c in inner:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    return out + ([cur.strip()] if cur.strip() else [])


def signature_help(facts: dict[str, Any], lines: list[str], pos: lsp.Position) -> lsp.SignatureHelp | None:
    """The signature of the stage method whose parentheses hold the cursor."""
    text = "\n".join(lines)
    here = offset(lines, pos.line, pos.character)
    depth, i, commas = 0, here - 1, 0
    floor = max(-1, here - _LONGEST_CALL)
    while i > floor:
        c = text[i]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            commas += 1
        i -= 1
    if i <= floor or text[i] != "(":
        return None
    name = _name_before(text, _skip_back_space(text, i))
    if name is None or name.start() == 0 or text[name.start() - 1] != ".":
        return None
    classes = facts.get("classes", {})
    cls = _receiver_class(facts, text, lines, name.start() - 1)
    owners = [cls] if cls in classes else sorted(c for c, methods in classes.items() if name.group() in methods)
    for owner in owners:
        sig = classes[owner].get(name.group())
        if sig is None:
            continue
        params = _split_params(sig)
        return lsp.SignatureHelp(signatures=[lsp.SignatureInformation(
            label=f"{name.group()}{sig}", documentation=f"a stage method of {owner}",
            parameters=[lsp.ParameterInformation(label=p) for p in params])],
            active_signature=0, active_parameter=min(commas, max(0, len(params) - 1)))
    return None


_CALL = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)\(")
_MUT = re.compile(r"annotate `([A-Za-z_][A-Za-z0-9_]*)` with Mut\[")


def _call_in_help(help_text: str, method: str) -> str | None:
    """`name(args)` when the help writes a full call of `method` (no `...` placeholder)."""
    for match in _CALL.finditer(help_text):
        if match.group(1) != method:
            continue
        close = _matching(help_text, match.end() - 1)
        if close is not None:
            call = help_text[match.start() + 1:close + 1]
            if "..." not in call:
                return call
    return None


_STRING = re.compile(r"\"[^\"]*\"|'[^']*'")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DTYPE = re.compile(r"(?:[iu]\d+|bf16|f32|f8e4m3|f8e5m2|f4e2m1)$")


def _concrete(replacement: str, original: str) -> bool:
    """Whether every name the replacement uses is the call's own, a dtype, `m` or `cast`: a
    help that writes a placeholder (`.cast(bf16, packet)`) is advice, not a fix."""
    have = set(_NAME.findall(_STRING.sub("", original)))
    return all(n in have or n in ("m", "cast") or _DTYPE.match(n) for n in _NAME.findall(_STRING.sub("", replacement)))


def _replace_call(diag: lsp.Diagnostic, lines: list[str], uri: str) -> lsp.CodeAction | None:
    data = diag.data if isinstance(diag.data, dict) else {}
    help_text, text = data.get("help") or "", "\n".join(lines)
    start = offset(lines, diag.range.start.line, diag.range.start.character)
    match = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[start:])
    if match is None:
        return None
    name = match.group()
    replacement = _call_in_help(help_text, name)
    paren = start + len(name)
    while paren < len(text) and text[paren] in " \t":
        paren += 1
    if replacement is None or paren >= len(text) or text[paren] != "(":
        return None
    close = _matching(text, paren)
    if close is None or not _concrete(replacement, text[start:close + 1]):
        return None
    span = lsp.Range(lsp.Position(*position_of(lines, start)), lsp.Position(*position_of(lines, close + 1)))
    return lsp.CodeAction(title=f"npu-opt: use .{replacement}", kind=lsp.CodeActionKind.QuickFix,
                          diagnostics=[diag], is_preferred=True,
                          edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(span, replacement)]}))


def _add_mut(diag: lsp.Diagnostic, lines: list[str], uri: str) -> lsp.CodeAction | None:
    data = diag.data if isinstance(diag.data, dict) else {}
    found = _MUT.search(data.get("help") or "")
    if found is None:
        return None
    param = found.group(1)
    pattern = re.compile(rf"\b{re.escape(param)}\s*:\s*")
    for line0 in range(min(diag.range.start.line, len(lines) - 1), -1, -1):
        if not lines[line0].lstrip().startswith("def ") and "def " not in lines[line0]:
            continue
        for k in range(line0, min(line0 + 20, len(lines))):
            hit = pattern.search(lines[k])
            if hit is None:
                continue
            start = hit.end()
            if lines[k][start:].startswith("Mut["):
                return None
            end = _annotation_end(lines[k], start)
            text = lines[k][start:end]
            span = lsp.Range(lsp.Position(k, len(lines[k][:start].encode("utf-16-le")) // 2),
                             lsp.Position(k, len(lines[k][:end].encode("utf-16-le")) // 2))
            return lsp.CodeAction(title=f"npu-opt: make `{param}` in-out: Mut[{text}]",
                                  kind=lsp.CodeActionKind.QuickFix, diagnostics=[diag], is_preferred=True,
                                  edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(span, f"Mut[{text}]")]}))
        return None
    return None


def _annotation_end(line: str, start: int) -> int:
    """The end of an annotation starting at `start` (at depth 0: `,`, `)`, `=` or the line's end)."""
    depth, quote = 0, None
    for i in range(start, len(line)):
        c = line[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c in ",=" and depth == 0:
            return i
    return len(line.rstrip())


def code_actions(diagnostics: list[lsp.Diagnostic], lines: list[str], uri: str) -> list[lsp.CodeAction]:
    """The quick fixes of the diagnostics the client asks about."""
    out = []
    for diag in diagnostics:
        if diag.source != "npu-opt":
            continue
        action = _replace_call(diag, lines, uri) or _add_mut(diag, lines, uri)
        if action is not None:
            out.append(action)
    return out
