"""`npu-opt compile PATH... -o DIR`: one `.visa` or `.fail` per kernel, and `manifest.json`.

Every file is written to a temporary name and renamed, so an interrupted run leaves no
partial file; a stale file of the other kind is removed. The exit status is computed
from what was written (docs/reference/cli.md): a `.fail` can never come with exit 0.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import posixpath
import sys
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from ir.diagnostic import Diagnostic, render_all
from npu_opt.check_command import EXIT_ICE, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, _duplicates, run_check
from npu_opt.compile_api import Outcome, compile_kernel, compiler_fingerprint, npu_opt_version
from npu_opt.discover import discover

__all__ = ["run_compile", "fail_text", "write_atomic", "CACHE_DIR"]

CACHE_DIR = ".npu-opt-cache"
_KERNELS: list[Any] = []  # set before forking the worker pool; workers pick by index


def write_atomic(path: Path, data: str) -> None:
    """Write `data` to `path` through a temporary file in the same directory."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(data, encoding="utf-8")
    os.replace(tmp, path)


def fail_text(diagnostics: tuple[Diagnostic, ...], warnings: tuple[Diagnostic, ...]) -> str:
    """The `.fail` file of docs/ci.md: rendered diagnostics, `--- json`, one object a line."""
    every = tuple(diagnostics) + tuple(warnings)
    return render_all(every, "human") + "\n--- json\n" + "\n".join(d.json_line() for d in every) + "\n"


def _target_of(spec: str | None) -> Any:
    from tu_ops.target import get_target, load_target

    if spec is None or spec == "rngd":
        return get_target("rngd")
    if Path(spec).is_file():
        return load_target(spec)
    return get_target(spec)


def _target_hash(target: Any) -> str:
    from tu_ops.target import target_sha256

    return getattr(target, "file_sha256", None) or target_sha256(target)


def _cache_key(kernel: Any, target: Any, compat: bool) -> str:
    source = Path(kernel.file).read_bytes() if Path(kernel.file).is_file() else b""
    parts = [compiler_fingerprint(), _target_hash(target), f"compat={compat}", kernel.file, kernel.name]
    digest = hashlib.sha256("\0".join(parts).encode())
    digest.update(source)
    return digest.hexdigest()


def _cache_get(cache: Path, key: str) -> Outcome | None:
    path = cache / f"{key}.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        diags = tuple(Diagnostic(**{k: (tuple(v) if k == "notes" else v) for k, v in d.items()})
                      for d in data["diagnostics"])
        warns = tuple(Diagnostic(**{k: (tuple(v) if k == "notes" else v) for k, v in d.items()})
                      for d in data["warnings"])
        return Outcome(data["kernel"], data["status"], data["text"], diags, warns, {})
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged cache entry is simply a miss


def _cache_put(cache: Path, key: str, outcome: Outcome) -> None:
    if outcome.status == "ice":
        return  # never cache a compiler bug
    cache.mkdir(parents=True, exist_ok=True)
    data = {"kernel": outcome.kernel, "status": outcome.status, "text": outcome.text,
            "diagnostics": [d.to_json() for d in outcome.diagnostics],
            "warnings": [d.to_json() for d in outcome.warnings]}
    write_atomic(cache / f"{key}.json", json.dumps(data))


def _compile_index(args: tuple[int, Any, bool, str | None]) -> Outcome:
    index, target, compat, dump_ir = args
    return compile_kernel(_KERNELS[index], target, compat, dump_ir)


def _compile_all(kernels: list[Any], target: Any, compat: bool, dump_ir: str | None,
                 jobs: int, progress: bool) -> list[Outcome]:
    work = [(i, target, compat, dump_ir) for i in range(len(kernels))]
    _KERNELS[:] = kernels
    if jobs <= 1 or len(kernels) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        results = []
        for n, item in enumerate(work, 1):
            results.append(_compile_index(item))
            _progress(progress, n, len(work), kernels[n - 1].name)
        return results
    with multiprocessing.get_context("fork").Pool(min(jobs, len(kernels))) as pool:
        results = []
        for n, outcome in enumerate(pool.imap(_compile_index, work), 1):
            results.append(outcome)
            _progress(progress, n, len(work), outcome.kernel)
        return results


def _progress(enabled: bool, n: int, total: int, name: str) -> None:
    if enabled:
        end = "\n" if n == total else ""
        print(f"\r[{n}/{total}] {name[:40]:40}", end=end, file=sys.stderr, flush=True)


def _qualname(file: str, kernel: Any) -> str:
    module = posixpath.normpath(file.replace(os.sep, "/"))
    module = module[:-3] if module.endswith(".py") else module
    return f"{module.replace('/', '.')}.{kernel.__qualname__}"


def run_compile(paths: list[str], out_dir: str, *, backend: str = "npu", target: str | None = None,
                pattern: str | None = None, dump_ir: str | None = None, jobs: int | None = None,
                compat: bool = True, fmt: str = "human", out: TextIO | None = None) -> int:
    """Compile every kernel under `paths` into `out_dir`; return the exit status."""
    out = out or sys.stdout
    if backend == "typecheck":
        return run_check(paths, pattern, fmt, out)
    if backend != "npu":
        print(f"error[USAGE]: unknown backend {backend!r} for compile (npu or typecheck)", file=out)
        return EXIT_USAGE
    try:
        tgt = _target_of(target)
    except Exception as e:  # noqa: BLE001 - a bad target file is a usage error
        print(f"error[USAGE]: cannot load target {target!r}: {e}", file=out)
        return EXIT_USAGE
    found = discover(paths, pattern)
    errors = list(found.errors) + _duplicates(found.kernels)
    dup_names = {e.message.split("`")[1] for e in errors[len(found.errors):]}
    kernels = [k for k in found.kernels if k.name not in dup_names]
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    cache = directory / CACHE_DIR
    outcomes: dict[int, Outcome] = {}
    keys = [_cache_key(k, tgt, compat) for k in kernels]
    misses = []
    for i, key in enumerate(keys):
        hit = None if dump_ir else _cache_get(cache, key)
        if hit is None:
            misses.append(i)
        else:
            outcomes[i] = hit
    progress = out is sys.stdout and sys.stderr.isatty() and len(misses) > 4
    fresh = _compile_all([kernels[i] for i in misses], tgt, compat, dump_ir, jobs or os.cpu_count() or 1, progress)
    for i, outcome in zip(misses, fresh):
        outcomes[i] = outcome
        _cache_put(cache, keys[i], outcome)
    entries = [_write(directory, kernels[i], outcomes[i]) for i in range(len(kernels))]
    manifest: dict[str, Any] = {"npu_opt_version": npu_opt_version(),
                                "target": {"name": tgt.name, "sha256": _target_hash(tgt)},
                                "kernels": entries}
    if errors:
        manifest["errors"] = [e.to_json() for e in errors]
    write_atomic(directory / "manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    _report(errors, [outcomes[i] for i in range(len(kernels))], kernels, fmt, out)
    status = max([{"ok": EXIT_OK, "refused": EXIT_REFUSED, "ice": EXIT_ICE}[e["status"]] for e in entries],
                 default=EXIT_OK)
    return EXIT_USAGE if errors else status


def _write(directory: Path, kernel: Any, outcome: Outcome) -> dict[str, Any]:
    ok = outcome.status == "ok"
    name = f"{kernel.name}.visa" if ok else f"{kernel.name}.fail"
    stale = directory / (f"{kernel.name}.fail" if ok else f"{kernel.name}.visa")
    data = outcome.text if ok else fail_text(outcome.diagnostics, outcome.warnings)
    write_atomic(directory / name, data)
    if stale.exists():
        stale.unlink()
    file = posixpath.normpath(kernel.file.replace(os.sep, "/"))
    return {"name": kernel.name, "qualname": _qualname(file, kernel), "file": file,
            "status": outcome.status, "code": outcome.code, "artifact": name,
            "sha256": hashlib.sha256(data.encode("utf-8")).hexdigest(),
            "timings_ms": outcome.timings_ms}


def _report(errors: list[Any], outcomes: list[Outcome], kernels: list[Any], fmt: str, out: TextIO) -> None:
    for error in errors:
        diag = Diagnostic(code=error.code, message=error.message, file=error.file, line=error.line, col=error.col)
        print({"json": diag.json_line(), "github": diag.github()}.get(fmt, error.render()), file=out)
    counts: Counter[str] = Counter()
    for kernel, outcome in zip(kernels, outcomes):
        counts[outcome.status] += 1
        every = outcome.diagnostics + outcome.warnings
        if fmt == "json":
            if every:
                print(render_all(every, "json"), file=out)
            continue
        if fmt == "github" and every:
            print(render_all(every, "github"), file=out)
        detail = f"{outcome.code}" if outcome.code else f"{kernel.name}.visa"
        print(f"{outcome.status:8} {kernel.name:28} {detail}", file=out)
        if fmt == "human" and every:
            print(render_all(every, "human") + "\n", file=out)
    if fmt != "json":
        parts = [f"{counts[s]} {s}" for s in ("ok", "refused", "ice") if counts[s] or s == "ok"]
        if errors:
            parts.append(f"{len(errors)} input error(s)")
        print(f"compiled {len(outcomes)} kernel(s): {', '.join(parts)}", file=out)
