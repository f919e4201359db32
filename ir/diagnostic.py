"""Diagnostics: one refusal or warning with its code, location, op and remedy.

Rendered rustc-style for people (source line and caret), as JSON for tools
(docs/ci.md) and as GitHub annotations for CI.
"""

from __future__ import annotations

import json
import linecache
import os
from typing import Any

import attrs

from ir.location import Location

__all__ = ["Diagnostic", "Violation", "render_all"]


@attrs.frozen
class Violation:
    """A rule failure before it gets a location: what the rule checkers return."""

    code: str
    message: str
    label: str | None = None
    notes: tuple[str, ...] = ()
    help: str | None = None


def _display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@attrs.frozen
class Diagnostic:
    """One diagnostic (docs/reference/python-api.md): the keys of a `.fail` JSON line, plus rendering."""

    code: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    stage: str | None = None
    op: str | None = None
    notes: tuple[str, ...] = ()
    help: str | None = None
    length: int = attrs.field(default=1, eq=False)

    @property
    def severity(self) -> str:
        return "warning" if self.code.startswith("W-") else "error"

    @classmethod
    def from_violation(cls, v: Violation, loc: Location | None, stage: str | None = None,
                       op: str | None = None) -> Diagnostic:
        """Attach a location, the stage and the printed op to a rule violation."""
        notes = list(v.notes)
        if stage is not None:
            where = f"in stage `{stage}`" + (f" (ir op `{op}`)" if op else "")
            notes.insert(0, where)
        if v.label:
            notes.insert(0, v.label)
        return cls(code=v.code, message=v.message,
                   file=_display_path(loc.file) if loc else None,
                   line=loc.line if loc else None, col=loc.col if loc else None,
                   stage=stage, op=op, notes=tuple(notes), help=v.help,
                   length=loc.length if loc else 1)

    def to_json(self) -> dict[str, Any]:
        """The dict of docs/ci.md, keys in order."""
        return {"code": self.code, "message": self.message, "file": self.file, "line": self.line,
                "col": self.col, "stage": self.stage, "op": self.op, "notes": list(self.notes),
                "help": self.help}

    def render(self) -> str:
        """Human text, rustc style, with the source line and a caret when available."""
        out = [f"{self.severity}[{self.code}]: {self.message}"]
        notes = list(self.notes)
        label = None
        if self.file is not None and self.line:
            out.append(f"  --> {self.file}:{self.line}" + (f":{self.col}" if self.col else ""))
            source = linecache.getline(self.file, self.line).rstrip("\n")
            if source and self.col:
                gutter = " " * len(str(self.line))
                label = notes.pop(0) if notes and self._has_label() else None
                caret = " " * (self.col - 1) + "^" * max(1, self.length)
                out += [f"{gutter} |", f"{self.line} | {source}",
                        f"{gutter} | {caret}" + (f" {label}" if label else "")]
        pad = " " * (len(str(self.line)) if self.line else 1)
        for note in notes:
            out.append(f"{pad} = note: {note}")
        if self.help:
            out.append(f"{pad} = help: {self.help}")
        return "\n".join(out)

    def _has_label(self) -> bool:
        """The first note is the caret label unless it is the stage note."""
        return bool(self.notes) and not self.notes[0].startswith("in stage `")

    def github(self) -> str:
        """One GitHub Actions annotation line. Its data and its `file` property are escaped
        the way the runner reads them (`%`, CR, LF; in a property also `:` and `,`), so a
        file name or a message cannot end the line and issue a command of its own."""
        kind = "warning" if self.severity == "warning" else "error"
        where = ""
        if self.file:
            where = f" file={_gh_property(str(self.file))}" + (f",line={int(self.line)}" if self.line else "") \
                + (f",col={int(self.col)}" if self.col else "")
        text = f"[{self.code}] {self.message}" + (f" (help: {self.help})" if self.help else "")
        return f"::{kind}{where}::{_gh_data(text)}"

    def json_line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False)


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def render_all(diagnostics: list[Diagnostic] | tuple[Diagnostic, ...], fmt: str = "human") -> str:
    """Render many diagnostics in one of the three formats."""
    if fmt == "json":
        return "\n".join(d.json_line() for d in diagnostics)
    if fmt == "github":
        return "\n".join(d.github() for d in diagnostics)
    return "\n\n".join(d.render() for d in diagnostics)
