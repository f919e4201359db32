"""`npu-opt check PATH...`: typecheck every kernel found, one status line each, then a summary.

Exit status (docs/reference/cli.md): 0 all ok, 1 some refused, 2 bad path / file that does not load /
duplicate kernel names / a kernel whose body raised a Python error.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TextIO

from ir.diagnostic import Diagnostic, render_all
from npu_opt.discover import LoadError, discover

__all__ = ["run_check", "EXIT_OK", "EXIT_REFUSED", "EXIT_USAGE", "EXIT_ICE"]

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_ICE = 0, 1, 2, 3


def _duplicates(kernels) -> list[LoadError]:
    counts = Counter(k.name for k in kernels)
    return [LoadError(k.file, f"kernel name `{k.name}` is defined more than once in this invocation",
                      k.line) for k in kernels if counts[k.name] > 1]


def run_check(paths: list[str], pattern: str | None, fmt: str, out: TextIO | None = None) -> int:
    """Check the kernels under `paths`; print per `fmt`; return the exit status."""
    out = out or sys.stdout
    found = discover(paths, pattern)
    errors = list(found.errors) + _duplicates(found.kernels)
    status = EXIT_USAGE if errors else EXIT_OK
    for error in errors:
        if fmt == "json":
            print(Diagnostic(code=error.code, message=error.message, file=error.file, line=error.line,
                             col=error.col).json_line(), file=out)
        elif fmt == "github":
            print(Diagnostic(code=error.code, message=error.message, file=error.file, line=error.line,
                             col=error.col).github(), file=out)
        else:
            print(error.render(), file=out)
    counts = Counter()
    for kernel in found.kernels:
        diagnostics = kernel.trace().diagnostics
        errs = [d for d in diagnostics if d.severity == "error"]
        state = "refused" if errs else "ok"
        counts[state] += 1
        if any(d.code == "USAGE" for d in errs):
            status = EXIT_USAGE
        elif errs and status == EXIT_OK:
            status = EXIT_REFUSED
        _report(kernel, state, errs, diagnostics, fmt, out)
    if fmt != "json":
        parts = [f"{counts['ok']} ok"] + ([f"{counts['refused']} refused"] if counts["refused"] else [])
        if errors:
            parts.append(f"{len(errors)} input error(s)")
        print(f"checked {len(found.kernels)} kernel(s): {', '.join(parts)}", file=out)
    return status


def _report(kernel, state: str, errs: list[Diagnostic], diagnostics, fmt: str, out: TextIO) -> None:
    if fmt == "json":
        if diagnostics:
            print(render_all(diagnostics, "json"), file=out)
        return
    if fmt == "github":
        if diagnostics:
            print(render_all(diagnostics, "github"), file=out)
        print(f"{state:8} {kernel.name}", file=out)
        return
    where = f"{errs[0].code} at {errs[0].file}:{errs[0].line}" + (f":{errs[0].col}" if errs[0].col else "") \
        if errs else kernel.file_display
    print(f"{state:8} {kernel.name:28} {where}", file=out)
    if diagnostics:
        print(render_all(diagnostics, "human") + "\n", file=out)
