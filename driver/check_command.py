"""`npu-opt check PATH...`: typecheck every kernel found, one status line each, then a summary.

Exit status (docs/reference/cli.md), the same rule as `compile`: the maximum over kernels of 0 ok,
1 refused, 3 internal compiler error; 2 when a path or file does not load, two kernels
share a name, or a kernel has a USAGE error (its body raised a Python error, an
annotation does not evaluate), which takes precedence.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TextIO

from ir.diagnostic import Diagnostic, render_all
from driver.color import paint, use_color
from driver.discover import LoadError, discover
from driver.json_report import error_record, kernel_record, summary_record
from npu_opt.compile_api import ice_diagnostic
import stat
import attrs
import signal
from ir.errors import InternalError
from driver.exit_codes import EXIT_ICE, EXIT_OK, EXIT_REFUSED, EXIT_USAGE

__all__ = ["run_check", "can_fork", "EXIT_OK", "EXIT_REFUSED", "EXIT_USAGE", "EXIT_ICE"]



MAX_NAME_BYTES = 200  # `.NAME.visa.XXXXXXXX.tmp` stays within a file system's 255-byte names


def _shown(name: str) -> str:
    return repr(name if len(name) <= 40 else name[:40] + "...")


def _duplicates(kernels) -> list[LoadError]:
    """The USAGE errors of kernel names that cannot be used: a name defined twice, and a
    name that is not a Python identifier of at most MAX_NAME_BYTES bytes (it names the
    kernel's artifact file: `../x`, `a/b`, a NUL or 300 characters could not)."""
    counts = Counter(k.name for k in kernels)
    errors = []
    for k in kernels:
        name = k.name
        if not valid_name(name):
            errors.append(LoadError(k.file, f"kernel name {_shown(str(name))} cannot name its artifact file: a "
                                            f"kernel name must be a Python identifier of at most "
                                            f"{MAX_NAME_BYTES} bytes (was the function's `__name__` changed?)",
                                    k.line))
        elif counts[name] > 1:
            errors.append(LoadError(k.file, f"kernel name `{name}` is defined more than once in this invocation",
                                    k.line))
    return errors


def valid_name(name: object) -> bool:
    """Whether a kernel name can name its artifact file (and be printed on one line)."""
    return isinstance(name, str) and name.isidentifier() and \
        len(name.encode("utf-8", "surrogatepass")) <= MAX_NAME_BYTES


def unusable_names(kernels) -> set[str]:
    """The names `_duplicates` refuses (their kernels are not compiled)."""
    counts = Counter(k.name for k in kernels)
    return {k.name for k in kernels if counts[k.name] > 1 or not valid_name(k.name)}


def load_target_spec(spec: str | None):
    """The target named by `--target NAME|FILE` (None: rngd)."""
    from tu_ops.target import BUILTIN_TARGETS, load_target

    if spec is None or spec in BUILTIN_TARGETS:
        return BUILTIN_TARGETS[spec or "rngd"]()
    try:
        info = Path(spec).stat()
    except OSError as e:
        raise ValueError(f"not a built-in target name, nor a readable file ({e.strerror or e})") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > (16 << 20):
        raise ValueError("not a built-in target name, nor a regular file of at most 16 MiB")  # /dev/zero, a FIFO
    return load_target(spec)


def kernel_status(errors) -> int:
    """One rule for `check` and `compile`: a kernel with a USAGE error (its Python code
    raised, an annotation does not evaluate) is exit 2, an ICE 3, another refusal 1."""
    codes = {d.code for d in errors}
    if "USAGE" in codes:
        return EXIT_USAGE
    return EXIT_ICE if "ICE" in codes else EXIT_REFUSED if codes else EXIT_OK


def trace_or_ice(kernel, target=None) -> tuple[Diagnostic, ...]:
    """The trace's diagnostics; an exception out of the trace is npu-opt's bug, an ICE."""
    try:
        return kernel.trace(target).diagnostics
    except Exception as e:  # noqa: BLE001 - anything the trace raises is an internal error
        return (ice_diagnostic(kernel.name, e, kernel.location),)


def denied(warnings) -> tuple[Diagnostic, ...]:
    """Warnings that `-D warnings` turns into the reasons a kernel is refused."""

    return tuple(attrs.evolve(w, notes=(*w.notes, "refused: -D warnings treats every warning as an error"))
                 for w in warnings)


def can_fork() -> bool:
    """Whether this system can fork worker processes (`check` and `compile` run in process when not)."""
    import multiprocessing  # the pool's: a check or compile of one kernel (or --jobs 1) runs in process

    return "fork" in multiprocessing.get_all_start_methods()


_CHECKED: list = []  # the kernels a forked `check --jobs N` worker picks by index


def _trace_index(args: tuple[int, object]) -> tuple[Diagnostic, ...]:
    index, target = args
    kernel = _CHECKED[index]
    try:
        return trace_or_ice(kernel, target)
    except BaseException as e:  # noqa: BLE001 - it must travel back to the parent as a diagnostic

        return (ice_diagnostic(kernel.name, e, kernel.location),)


def _trace_all(kernels: list, target: object, jobs: int | None) -> list[tuple[Diagnostic, ...]]:
    """Each kernel's diagnostics, traced on `jobs` forked workers (default 1: in this process).
    A kernel whose worker died is an internal error, as in `compile`; so are the kernels
    the broken pool then leaves unfinished (`compile` retries those one by one)."""

    if (jobs or 1) <= 1 or len(kernels) <= 1 or not can_fork():
        return [trace_or_ice(k, target) for k in kernels]
    import multiprocessing  # the pool's, as in can_fork
    from concurrent.futures import ProcessPoolExecutor

    _CHECKED[:] = kernels
    results: list[tuple[Diagnostic, ...]] = []
    pool = ProcessPoolExecutor(min(jobs, len(kernels)), mp_context=multiprocessing.get_context("fork"),
                               initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN))
    try:
        futures = [pool.submit(_trace_index, (i, target)) for i in range(len(kernels))]
        for kernel, future in zip(kernels, futures):
            try:
                results.append(future.result())
            except Exception:  # noqa: BLE001 - the worker died (a crash in native code, a signal)
                results.append((ice_diagnostic(kernel.name, InternalError(
                    "the worker process checking this kernel died"), kernel.location),))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


def run_check(paths: list[str], pattern: str | None, fmt: str, out: TextIO | None = None,
              target: str | None = None, color: str | None = None, jobs: int | None = None,
              deny_warnings: bool = False) -> int:
    """Check the kernels under `paths` on `target` (a built-in name or a description file;
    default rngd) on `jobs` worker processes; print per `fmt`; return the exit status. With
    `deny_warnings` (`-D warnings`) a warning refuses its kernel."""
    out = out or sys.stdout
    if jobs is not None and jobs < 1:
        print(f"error[USAGE]: --jobs {jobs}: expected at least 1 worker", file=out)
        return EXIT_USAGE
    colored = use_color(color, out) and fmt == "human"
    try:
        # The built-in default needs no target object (and no tu_ops import: `check` stays light).
        tgt = None if target in (None, "rngd") else load_target_spec(target)
    except Exception as e:  # noqa: BLE001 - a bad target name or file is a usage error
        print(f"error[USAGE]: cannot load target {target!r}: {e}", file=out)
        return EXIT_USAGE
    found = discover(paths, pattern)
    errors = list(found.errors) + _duplicates(found.kernels) + [e for e in [found.nothing_found(paths, pattern)] if e]
    status = EXIT_USAGE if errors else EXIT_OK
    report_errors(errors, fmt, out, colored)
    counts = Counter()
    kernels = [k for k in found.kernels if valid_name(k.name)]  # the others are refused above
    for kernel, diagnostics in zip(kernels, _trace_all(kernels, tgt, jobs)):
        errs = [d for d in diagnostics if d.severity == "error"]
        if deny_warnings:
            errs += denied(d for d in diagnostics if d.severity == "warning")
        state = "ice" if any(d.code == "ICE" for d in errs) else "refused" if errs else "ok"
        counts[state] += 1
        status = max(status, kernel_status(errs)) if status != EXIT_USAGE else status
        _report(kernel, state, errs, diagnostics, fmt, out, colored)
    report_summary("checked", len(kernels), counts, len(errors), status, fmt, out)
    return status


def report_errors(errors: list[LoadError], fmt: str, out: TextIO, colored: bool) -> None:
    """The input errors of `check` and `compile`, as `fmt` prints them."""
    for error in errors:
        if fmt == "json":
            error_record(error, out)
        elif fmt == "github":
            print(Diagnostic(code=error.code, message=error.message, file=error.file, line=error.line,
                             col=error.col).github(), file=out)
        else:
            print(paint(error.render(), colored), file=out)


def report_summary(verb: str, kernels: int, counts: Counter, errors: int, status: int, fmt: str, out: TextIO) -> None:
    """The last line of `check` and `compile`: the JSON summary, or `VERB N kernel(s): ...`."""
    if fmt == "json":
        summary_record(counts, errors, status, out)
        return
    parts = [f"{counts['ok']} ok"] + [f"{counts[s]} {s}" for s in ("refused", "ice") if counts[s]]
    if errors:
        parts.append(f"{errors} input error(s)")
    print(f"{verb} {kernels} kernel(s): {', '.join(parts)}", file=out)


def _report(kernel, state: str, errs: list[Diagnostic], diagnostics, fmt: str, out: TextIO,
            colored: bool = False) -> None:
    if fmt == "json":
        kernel_record(kernel.name, kernel.file_display, state, diagnostics, out)
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
        print(paint(render_all(diagnostics, "human"), colored) + "\n", file=out)
