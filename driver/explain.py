"""`npu-opt explain CODE`: one documentation page per diagnostic code (docs/reference/diagnostics.md).

Pages are data (`npu_opt/pages/<family>.toml`, one table per code). A page's example is
run and the diagnostic it really produces is printed, so the page can never drift from
the compiler:

- `example`: a whole kernel module. Pages of trace-time codes trace it; pages of
  lowering codes (phase `lower`, or any page with a `target`) compile it with the npu
  backend (`compile_kernel`), on the page's `target` (the TOML text of a target
  description file, tu_ops/targets/rngd.toml) when it has one, with compat mode unless
  `compat = false`.
- `op_example`: a Python snippet that builds one lowered op by hand and calls
  `.verify(target)` (op-verifier codes, docs/reference/diagnostics.md); the `OpVerifyError` it raises
  is rendered as the output.
- `command`: a command line (USAGE, ICE), shown as is.
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

from driver.explain_cache import cached_output
from driver.explain_index import code_list
from ir.codes import CODES, CodeInfo
from ir.diagnostic import Diagnostic

__all__ = [
    "Page", "page", "render_page", "normalize_code", "close_matches", "explain_command", "EXAMPLE_FILE",
    "TARGET_FILE", "verifier_diagnostic",
]

EXAMPLE_FILE = "example.py"
TARGET_FILE = "target.toml"
_KEYS = frozenset({"title", "rule", "when", "example", "op_example", "target", "compat", "command", "fixes",
                   "shadowed_by", "note"})
_counter = itertools.count()


@attrs.frozen
class Page:
    """One code's page: the rule, when it fires, an example and the fixes.

    `example` is a complete kernel module whose first diagnostic is `code` (or, when
    `shadowed_by` is set, that earlier rule, which today catches the situation first).
    `op_example` is a snippet building a bad lowered op and verifying it (op-verifier
    codes). `target` is the TOML text of the target the example compiles for (with
    `compat` mode or not). `command` is a command line shown instead of / besides a
    kernel (USAGE, ICE)."""

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
    op_example: str | None = None
    target: str | None = None
    compat: bool = True

    @property
    def info(self) -> CodeInfo | None:
        return CODES.get(self.code)

    @property
    def lowers(self) -> bool:
        """The example kernel is compiled by the npu backend, not only traced."""
        info = self.info
        return self.target is not None or (info is not None and info.phase == "lower")

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
    if "example" in table and "op_example" in table:
        raise ValueError(f"page {code} in {family}.toml has both an example kernel and an op_example")
    if not isinstance(table.get("compat", True), bool):
        raise ValueError(f"page {code} in {family}.toml: `compat` must be true or false")
    if "target" in table and "example" not in table:
        raise ValueError(f"page {code} in {family}.toml has a target but no example kernel to compile")
    fixes = table.get("fixes", [])
    fixes = [fixes] if isinstance(fixes, str) else fixes
    return Page(code=code, family=family, fixes=tuple(f.strip() for f in fixes),
                **{k: table.get(k, "").strip() for k in ("title", "rule", "when")},
                **{k: table[k] for k in _KEYS - {"title", "rule", "when", "fixes"} if k in table})


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


def page(code: str) -> Page | None:
    """The page of `code` (case-insensitive), or None."""
    return _load().get(normalize_code(code))


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

@contextmanager
def _example_module(source: str) -> Iterator[tuple[str, list[Any]]]:
    """Write `source` as example.py in a temp dir, import it, yield (its path, its @device
    kernels); the module is forgotten afterwards."""
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
            yield path, [v for v in vars(module).values() if isinstance(v, DeviceKernel)]
        finally:
            sys.modules.pop(name, None)
            linecache.checkcache(path)


def _trace_source(source: str) -> tuple[Diagnostic, ...]:
    """Trace every @device kernel of the example module (the trace-time [T] rules)."""
    with _example_module(source) as (path, kernels):
        diagnostics = [d for k in kernels for d in k.trace().diagnostics]
    return tuple(_relocate(d, path) for d in diagnostics)


def _compile_source(source: str, target: str | None = None, compat: bool = True) -> tuple[Diagnostic, ...]:
    """Compile every @device kernel of the example module with the npu backend, as
    `npu-opt compile [--target target.toml] [--no-compat]` does: each kernel's errors,
    then its warnings. `target` is the TOML text of a target description file."""
    from npu_opt.compile_api import compile_kernel
    from tu_ops.target_file import load_target_bytes  # the file's bytes, as load_target reads them

    tgt: Any = "rngd" if target is None else load_target_bytes(target.encode("utf-8"), source=TARGET_FILE)
    with _example_module(source) as (path, kernels):
        outcomes = [compile_kernel(k, tgt, compat) for k in kernels]
    diagnostics = [d for o in outcomes for d in (*o.diagnostics, *o.warnings)]
    return tuple(_relocate(d, path) for d in diagnostics)


def verifier_diagnostic(e: Any) -> Diagnostic:
    """An `OpVerifyError` as a diagnostic: its rule code, message and notes (no source
    location: a hand-built or artifact op has none)."""
    op = getattr(e, "op", None)
    text = op.text() if op is not None and hasattr(op, "text") else None
    return Diagnostic(code=e.code, message=e.message, op=text, notes=tuple(getattr(e, "notes", ())))


def _verify_snippet(source: str) -> tuple[Diagnostic, ...]:
    """Run an `op_example` snippet; the OpVerifyError it raises, as a diagnostic (none when
    the op verified)."""
    from tu_ops.base import OpVerifyError

    namespace: dict[str, Any] = {"__name__": f"_npu_opt_explain_op_example_{next(_counter)}"}
    code = compile(source, EXAMPLE_FILE, "exec")
    with _example_lines(source):
        try:
            exec(code, namespace)  # noqa: S102 - the page's own, shipped snippet
        except OpVerifyError as e:
            return (verifier_diagnostic(e),)
    return ()


def _relocate(d: Diagnostic, path: str) -> Diagnostic:
    if d.file is None:
        return d
    same = os.path.abspath(d.file) == os.path.abspath(path) or os.path.basename(d.file) == EXAMPLE_FILE
    return attrs.evolve(d, file=EXAMPLE_FILE) if same else d


def _run_example(p: Page) -> tuple[Diagnostic, ...]:
    if p.op_example is not None:
        return _verify_snippet(p.op_example)
    if p.example is None:
        return ()
    if p.lowers:
        return _compile_source(p.example, p.target, p.compat)
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


# --- rendering ----------------------------------------------------------------------------

def _wrap(text: str, indent: str = "  ") -> str:
    # break_on_hyphens=False: a code (PAIR-REDUCE-1) or a flag never splits across lines
    return "\n\n".join(textwrap.fill(" ".join(p.split()), width=88, initial_indent=indent,
                                     subsequent_indent=indent, break_on_hyphens=False)
                         for p in text.strip().split("\n\n"))


def _indent(text: str, indent: str = "    ") -> str:
    return "\n".join((indent + line) if line.strip() else "" for line in text.rstrip("\n").splitlines())


def _example_output(p: Page) -> str:
    source = p.op_example if p.op_example is not None else (p.example or "")
    try:
        diagnostics = _run_example(p)
    except Exception as e:  # a broken example must not break `explain`
        verb = "run" if p.op_example is not None else ("compiled" if p.lowers else "traced")
        return f"  (the example could not be {verb}: {type(e).__name__}: {e})"
    if not diagnostics:
        if p.op_example is not None:
            return "  (this npu-opt build verifies the op without complaint: the rule's check is not implemented)"
        return ("  (this npu-opt build reports nothing for the example yet: the rule's check is not "
                "implemented)")
    first = diagnostics[0]
    with _example_lines(source):  # the example's source line and caret
        text = _indent(first.render(), "  ")
    if first.code != p.expected_code:
        text += f"\n\n  (expected {p.expected_code}; this npu-opt build reports {first.code} first)"
    return text


_WHERE = {
    "trace": "checked while tracing (check, every backend)",
    "lower": "checked when lowering (npu backend: compile, not check)",
    "verify": "checked by the op verifiers after lowering (npu backend) and by `npu-opt visa --verify`",
    "mapping": "raised by m() / axes()",
    "cli": "raised by the command line",
    "internal": "raised when npu-opt itself fails (npu backend)",
    "run": "raised at run time by the cpu backend and the VISA interpreter",
}


def render_page(p: Page, with_example_output: bool = True) -> str:
    """The page as text: title, rule, when, example (and its real diagnostic), fixes."""
    info = p.info
    head = f"{p.code}: {p.title}"
    out = [head, "=" * len(head)]
    if info is not None:
        out.append(f"Defined in {info.section}; {_WHERE.get(info.phase, info.phase)}.")
    out += ["", "Rule", _wrap(p.rule), "", "When it happens", _wrap(p.when)]
    if p.note:
        out += ["", "Note", _wrap(p.note)]
    if p.command:
        out += ["", "Example invocation", _indent(p.command.strip("\n"))]
    if p.target:
        out += ["", f"Target description ({TARGET_FILE})", _indent(p.target.strip("\n"))]
    if p.example:
        out += ["", f"Example ({EXAMPLE_FILE})", _indent(p.example.strip("\n"))]
        if with_example_output:
            if p.shadowed_by:
                label = f"Output (npu-opt reports this situation as {p.shadowed_by})"
            elif p.lowers:
                flags = (f" --target {TARGET_FILE}" if p.target else "") + ("" if p.compat else " --no-compat")
                label = f"Output (npu-opt compile {EXAMPLE_FILE}{flags})"
            else:
                label = "Output"
            out += ["", label, _example_output(p)]
    if p.op_example:
        out += ["", "Example (a bad op built by hand)", _indent(p.op_example.strip("\n"))]
        if with_example_output:
            out += ["", "Output (the op verifier)", _example_output(p)]
    out += ["", "How to fix it"]
    out += [textwrap.fill(" ".join(f.split()), width=88, initial_indent="  - ", subsequent_indent="    ",
                          break_on_hyphens=False) for f in p.fixes]
    return "\n".join(out) + "\n"


def explain_command(code: str | None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """What `npu-opt explain [CODE]` does: print the page (exit 0), the list of codes when
    no code is given (exit 0), or an unknown-code error (exit 2)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if code is None:
        out.write(code_list())
        return 0
    p = page(code)
    if p is None:
        matches = close_matches(code)
        hint = f"; did you mean {', '.join(matches)}?" if matches else ""
        print(f"error[USAGE]: unknown code {code!r}{hint}", file=err)
        print("  = help: codes look like TYPE-1, FETCH-3, MAP-syntax or USAGE", file=err)
        return 2
    out.write(cached_output(repr(p), lambda: render_page(p)))
    return 0
