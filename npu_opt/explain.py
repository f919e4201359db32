"""`npu-opt explain CODE`: one documentation page per diagnostic code (api.md 5).

Pages are data (`npu_opt/pages/<family>.toml`, one table per code). A page's example is a
whole kernel module; rendering runs it through the tracer and prints the diagnostic it
really produces, so the page can never drift from the compiler.
"""

from __future__ import annotations

import difflib
import importlib.util
import itertools
import linecache
import os
import sys
import tempfile
import textwrap
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from importlib.resources import files
from typing import Any, TextIO

import attrs

from ir.codes import CODES, CodeInfo
from ir.diagnostic import Diagnostic

__all__ = [
    "Page", "page", "all_codes", "all_pages", "render_page", "example_diagnostics",
    "normalize_code", "close_matches", "explain_command", "render_diagnostic", "EXAMPLE_FILE",
]

EXAMPLE_FILE = "example.py"
_KEYS = frozenset({"title", "rule", "when", "example", "command", "fixes", "shadowed_by", "note"})
_counter = itertools.count()


@attrs.frozen
class Page:
    """One code's page: the rule, when it fires, an example and the fixes.

    `example` is a complete kernel module whose first diagnostic is `code` (or, when
    `shadowed_by` is set, that earlier rule, which today catches the situation first).
    `command` is a command line shown instead of / besides a kernel (USAGE)."""

    code: str
    family: str
    title: str
    rule: str
    when: str
    fixes: tuple[str, ...]
    example: str | None = None
    command: str | None = None
    shadowed_by: str | None = None
    note: str | None = None

    @property
    def info(self) -> CodeInfo | None:
        return CODES.get(self.code)

    @property
    def expected_code(self) -> str:
        """The code the example's first diagnostic carries."""
        return self.shadowed_by or self.code


def normalize_code(code: str) -> str:
    """Canonical spelling: families upper case, MAP- categories lower case with underscores
    (`map-Zero-Size` -> `MAP-zero_size`)."""
    text = code.strip()
    if text.upper().startswith("MAP-"):
        return "MAP-" + text[4:].lower().replace("-", "_")
    return text.upper()


def _page_from(code: str, family: str, table: dict[str, Any]) -> Page:
    unknown = set(table) - _KEYS
    if unknown:
        raise ValueError(f"page {code} in {family}.toml has unknown keys {sorted(unknown)}")
    fixes = table.get("fixes", [])
    if isinstance(fixes, str):
        fixes = [fixes]
    return Page(code=code, family=family, title=table.get("title", "").strip(),
                rule=table.get("rule", "").strip(), when=table.get("when", "").strip(),
                fixes=tuple(f.strip() for f in fixes), example=table.get("example"),
                command=table.get("command"), shadowed_by=table.get("shadowed_by"),
                note=table.get("note"))


@lru_cache(maxsize=1)
def _load() -> dict[str, Page]:
    pages: dict[str, Page] = {}
    folder = files("npu_opt").joinpath("pages")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        family = entry.name[:-len(".toml")]
        data = tomllib.loads(entry.read_text(encoding="utf-8"))
        for code, table in data.items():
            key = normalize_code(code)
            if key in pages:
                raise ValueError(f"page {key} is defined twice ({pages[key].family}.toml, {family}.toml)")
            pages[key] = _page_from(key, family, table)
    return pages


def all_pages() -> dict[str, Page]:
    """Every page, keyed by its canonical code."""
    return dict(_load())


def page(code: str) -> Page | None:
    """The page of `code` (case-insensitive), or None."""
    return _load().get(normalize_code(code))


def all_codes() -> tuple[str, ...]:
    """Codes that have a page: rule-index order first, then any others alphabetically."""
    pages = _load()
    ordered = [c for c in CODES if c in pages]
    return tuple(ordered + sorted(set(pages) - set(ordered)))


def close_matches(code: str, n: int = 3) -> list[str]:
    """Known codes that look like `code` (for an 'unknown code' message)."""
    known = list(dict.fromkeys([*CODES, *_load()]))
    want = normalize_code(code)
    found = difflib.get_close_matches(want, known, n=n, cutoff=0.6)
    if not found:
        upper = {c.upper(): c for c in known}
        found = [upper[c] for c in difflib.get_close_matches(want.upper(), list(upper), n=n, cutoff=0.5)]
    return found


# --- running an example -------------------------------------------------------------------

def _trace_source(source: str) -> tuple[Diagnostic, ...]:
    """Write `source` as example.py in a temp dir, import it, trace every @device kernel."""
    from npu_opt.device import DeviceKernel

    name = f"_npu_opt_explain_example_{next(_counter)}"
    with tempfile.TemporaryDirectory(prefix="npu-opt-explain-") as tmp:
        path = os.path.join(tmp, EXAMPLE_FILE)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the example as a module from {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
            kernels = [v for v in vars(module).values() if isinstance(v, DeviceKernel)]
            diagnostics = [d for k in kernels for d in k.trace().diagnostics]
        finally:
            sys.modules.pop(name, None)
            linecache.checkcache(path)
        return tuple(_relocate(d, path) for d in diagnostics)


def _relocate(d: Diagnostic, path: str) -> Diagnostic:
    if d.file is None:
        return d
    same = os.path.abspath(d.file) == os.path.abspath(path) or os.path.basename(d.file) == EXAMPLE_FILE
    return attrs.evolve(d, file=EXAMPLE_FILE) if same else d


def example_diagnostics(code: str) -> tuple[Diagnostic, ...]:
    """Every diagnostic of the page's example kernel, in report order (file = example.py)."""
    p = page(code)
    if p is None:
        raise KeyError(f"no page for {code!r}")
    if p.example is None:
        return ()
    return _trace_source(p.example)


@contextmanager
def _example_lines(source: str) -> Iterator[None]:
    """Let `Diagnostic.render` read example.py's lines while the temp file is gone."""
    previous = linecache.cache.get(EXAMPLE_FILE)
    lines = source.splitlines(keepends=True)
    linecache.cache[EXAMPLE_FILE] = (len(source), None, lines, EXAMPLE_FILE)
    try:
        yield
    finally:
        if previous is None:
            linecache.cache.pop(EXAMPLE_FILE, None)
        else:
            linecache.cache[EXAMPLE_FILE] = previous


def render_diagnostic(d: Diagnostic, source: str) -> str:
    """`d.render()` with the example's source line and caret."""
    with _example_lines(source):
        return d.render()


# --- rendering ----------------------------------------------------------------------------

def _wrap(text: str, indent: str = "  ") -> str:
    paragraphs = [p for p in text.strip().split("\n\n")]
    return "\n\n".join(textwrap.fill(" ".join(p.split()), width=88, initial_indent=indent,
                                     subsequent_indent=indent) for p in paragraphs)


def _indent(text: str, indent: str = "    ") -> str:
    return "\n".join((indent + line) if line.strip() else "" for line in text.rstrip("\n").splitlines())


def _example_output(p: Page) -> str:
    try:
        diagnostics = _trace_source(p.example or "")
    except Exception as e:  # a broken example must not break `explain`
        return f"  (the example could not be traced: {type(e).__name__}: {e})"
    if not diagnostics:
        return ("  (this npu-opt build reports nothing for the example yet: the rule's check is not "
                "implemented)")
    first = diagnostics[0]
    text = _indent(render_diagnostic(first, p.example or ""), "  ")
    if first.code != p.expected_code:
        text += f"\n\n  (expected {p.expected_code}; this npu-opt build reports {first.code} first)"
    return text


def render_page(p: Page, with_example_output: bool = True) -> str:
    """The page as text: title, rule, when, example (and its real diagnostic), fixes."""
    info = p.info
    head = f"{p.code}: {p.title}"
    out = [head, "=" * len(head)]
    if info is not None:
        where = {"trace": "checked while tracing (check, every backend)",
                 "lower": "checked when lowering (npu backend)",
                 "mapping": "raised by m() / axes()", "cli": "raised by the command line"}.get(info.phase, info.phase)
        out.append(f"Defined in {info.section}; {where}.")
    out += ["", "Rule", _wrap(p.rule), "", "When it happens", _wrap(p.when)]
    if p.note:
        out += ["", "Note", _wrap(p.note)]
    if p.command:
        out += ["", "Example invocation", _indent(p.command.strip("\n"))]
    if p.example:
        out += ["", f"Example ({EXAMPLE_FILE})", _indent(p.example.strip("\n"))]
        if with_example_output:
            label = "Output" if not p.shadowed_by else f"Output (npu-opt reports this situation as {p.shadowed_by})"
            out += ["", label, _example_output(p)]
    out += ["", "How to fix it"]
    out += [textwrap.fill(" ".join(f.split()), width=88, initial_indent="  - ", subsequent_indent="    ")
            for f in p.fixes]
    return "\n".join(out) + "\n"


def explain_command(code: str, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """What `npu-opt explain CODE` does: print the page (exit 0) or an unknown-code error (exit 2)."""
    out = out or sys.stdout
    err = err or sys.stderr
    p = page(code)
    if p is None:
        matches = close_matches(code)
        hint = f"; did you mean {', '.join(matches)}?" if matches else ""
        print(f"error[USAGE]: unknown code {code!r}{hint}", file=err)
        print("  = help: codes look like TYPE-1, FETCH-3, MAP-syntax or USAGE", file=err)
        return 2
    out.write(render_page(p))
    return 0
