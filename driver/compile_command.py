"""`npu-opt compile PATH... -o DIR`: one `.visa` or `.fail` per kernel, and `manifest.json`.

Every file is written to a temporary name and renamed, so an interrupted run leaves no
partial file; a stale file of the other kind is removed. The exit status is computed
from what was written (docs/reference/cli.md): a `.fail` can never come with exit 0, and the rule is
`check`'s (`kernel_status`): a kernel's USAGE error is exit 2. Workers ignore SIGINT (the
parent reports it once) and a worker that dies is an ICE of the kernel it was compiling.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
from collections import Counter
from hashlib import sha256
from pathlib import Path
from typing import Any, TextIO

import attrs

from ir.diagnostic import Diagnostic, render_all
from driver.check_command import (
    EXIT_ICE, EXIT_OK, EXIT_USAGE, _duplicates, can_fork, kernel_status, load_target_spec, report_errors,
    report_summary, run_check, unusable_names,
)
from npu_opt.compile_api import Outcome, compile_kernel, ice_diagnostic
from driver.fingerprint import compiler_fingerprint
from driver.compile_outputs import deny, fail_text, target_hash, writable_dir, write_outputs
from driver.color import paint, use_color
from driver.deps import Record, recording, snapshot, user_modules
from driver.discover import discover
from driver.replay import deps_hold, invocation_key, write_atomic
from driver.run_record import save_record
from driver.schedule_command import schedule_manifest_fields
from driver.json_report import kernel_record
from ir.errors import InternalError

__all__ = ["run_compile", "fail_text", "write_atomic", "CACHE_DIR"]

CACHE_DIR = ".npu-opt-cache"
_KERNELS: list[Any] = []  # set before forking the worker pool; workers pick by index


def _cache_key(kernel: Any, target: Any, compat: bool) -> str:
    source = Path(kernel.file).read_bytes() if Path(kernel.file).is_file() else b""
    search = repr([os.path.abspath(p) for p in sys.path if isinstance(p, str)])  # PYTHONPATH too
    parts = [compiler_fingerprint(), target_hash(target), f"compat={compat}", kernel.file, kernel.name, search]
    digest = sha256("\0".join(parts).encode())
    digest.update(source)
    return digest.hexdigest()


def _cache_get(cache: Path, key: str) -> tuple[Outcome, dict[str, Any]] | None:
    """The cached outcome of `key` and what its compile read, if all of it is unchanged."""
    path = cache / f"{key}.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.pop("sha256", None) != _entry_digest(data):
            return None  # edited or damaged since it was written: replay nothing unchecked
        if not deps_hold(data["deps"]):
            return None
        diags, warns = (tuple(Diagnostic(**{k: (tuple(v) if k == "notes" else v) for k, v in d.items()})
                              for d in data[part]) for part in ("diagnostics", "warnings"))
        outcome = Outcome(data["kernel"], data["status"], data["text"], diags, warns, {}, makespan=data.get("makespan"))
        return outcome, data["deps"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged cache entry is simply a miss


def _usable_cache(cache: Path) -> bool:
    """Whether `cache` (DIR/.npu-opt-cache) may be read and written: not when it is a
    symbolic link (the cache would live, and be trusted, wherever it points) or not a
    directory. The compile then runs without a cache and says so on stderr."""
    if cache.is_symlink() or (cache.exists() and not cache.is_dir()):
        kind = "a symbolic link" if cache.is_symlink() else "not a directory"
        print(f"npu-opt: note: {cache} is {kind}; compiling without the cache (neither read nor written: "
              "remove it to get the cache back)", file=sys.stderr)
        return False
    return True


def _entry_digest(data: dict[str, Any]) -> str:
    """The sha256 a cache entry keeps of the rest of itself (its text, verdict, diagnostics
    and what its compile read): an entry whose digest does not match is a miss."""
    return sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _cache_put(cache: Path, key: str, outcome: Outcome, read: Record) -> dict[str, Any] | None:
    """Cache `outcome` with the snapshot of what its compile read; that snapshot (None: an
    ICE, never cached)."""
    if outcome.status == "ice":
        return None  # never cache a compiler bug
    deps = snapshot(read)
    data = {"kernel": outcome.kernel, "status": outcome.status, "text": outcome.text, "deps": deps,
            "makespan": outcome.makespan,
            "diagnostics": [d.to_json() | {"length": d.length} for d in outcome.diagnostics],
            "warnings": [d.to_json() | {"length": d.length} for d in outcome.warnings]}  # caret width too
    data["sha256"] = _entry_digest(data)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        write_atomic(cache / f"{key}.json", json.dumps(data))
    except OSError:
        return None  # a read-only or file-shaped cache: compile without one (and leave no run record)
    return deps


def _compile_index(args: tuple[int, Any, bool, str | None]) -> tuple[Outcome, Record]:
    """Compile kernel `index`, recording what its trace read (files, modules, variables)."""
    index, target, compat, dump_ir = args
    with recording() as read:
        outcome = compile_kernel(_KERNELS[index], target, compat, dump_ir)
    read.files |= user_modules()
    if outcome.status == "ok" and outcome.artifact is not None:  # the makespan, from the artifact in hand
        fields = schedule_manifest_fields(outcome.text, outcome.kernel, target, None, outcome.artifact)
        outcome = attrs.evolve(outcome, makespan=fields["makespan"])
    return outcome, read


def _compile_remote(args: tuple[int, Any, bool, str | None]) -> tuple[Outcome, Record]:
    """`_compile_index` in a worker process: the outcome travels back without its artifact
    (its records do not pickle), with its makespan, so the parent parses no text."""
    try:
        outcome, read = _compile_index(args)
    except BaseException as e:  # noqa: BLE001 - anything escaping here could not travel back (pickling)
        kernel = _KERNELS[args[0]]
        return Outcome(kernel.name, "ice", None, (ice_diagnostic(kernel.name, e, kernel.location),), (), {}), Record()
    return attrs.evolve(outcome, artifact=None), read


def _compile_all(kernels: list[Any], target: Any, compat: bool, dump_ir: str | None,
                 jobs: int, progress: bool) -> list[tuple[Outcome, Record]]:
    work = [(i, target, compat, dump_ir) for i in range(len(kernels))]
    _KERNELS[:] = kernels
    if jobs <= 1 or len(kernels) <= 1 or not can_fork():
        results = []
        for n, item in enumerate(work, 1):
            results.append(_compile_index(item))
            _progress(progress, n, len(work), kernels[n - 1].name)
        return results
    _preload()
    results_by_index = _pool_run(work, min(jobs, len(kernels)), progress)
    for i in range(len(work)):  # a worker died: each unfinished kernel alone, to find the culprit
        if i not in results_by_index:
            results_by_index.update(_pool_run([work[i]], 1, False) or {i: _worker_died(kernels[i])})
    return [results_by_index[i] for i in range(len(work))]


def _preload() -> None:
    """The pipeline's modules, imported on first use: a compile on forked workers loads them in
    the parent first, so the workers inherit them instead of each importing them again (on 2
    cores, a third of a cold `compile examples/`). A module missing here only costs time."""
    import backends.npu  # noqa: F401
    import ir.mapping.structural  # noqa: F401
    import tu_ops
    import tu_ops.lower.api  # noqa: F401
    import tu_ops.lower.options  # noqa: F401
    from npu_opt import fills, gather, interleave, stages, switch_stage, vector_stages, views  # noqa: F401
    from visa import facts, printer  # noqa: F401
    from visa.schedule import report  # noqa: F401
    from tu_ops.lower.dispatch import LOWERINGS

    tu_ops.OP_CLASSES  # noqa: B018  every op class
    LOWERINGS.items()  # the lowering's declaration tables (tu_ops/lower/dispatch.py)
    user_modules()  # fills the caches of what is the user's


def _pool_run(work: list[Any], jobs: int, progress: bool) -> dict[int, tuple[Outcome, Record]]:
    """Run `work` on `jobs` forked workers; the results of the items that finished (a worker
    death breaks the pool: the items it had not finished are missing)."""
    import multiprocessing  # the pool's, as in can_fork
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=signal.signal,  # the parent handles Ctrl-C, once
                               initargs=(signal.SIGINT, signal.SIG_IGN))
    done: dict[int, tuple[Outcome, Record]] = {}
    try:
        futures = {pool.submit(_compile_remote, item): item[0] for item in work}
        for future in as_completed(futures):
            try:
                done[futures[future]] = future.result()
            except BrokenProcessPool:
                continue
            _progress(progress, len(done), len(work), done[futures[future]][0].kernel)
    finally:
        for process in list(getattr(pool, "_processes", {}).values()):
            if process.is_alive() and len(done) < len(work):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
    return done


def _worker_died(kernel: Any) -> tuple[Outcome, Record]:
    """The outcome of a kernel whose worker process died while compiling it."""
    diag = ice_diagnostic(kernel.name, InternalError("the worker process compiling this kernel died "
                                                     "(os._exit, a signal or a crash in native code)"),
                          kernel.location)
    return Outcome(kernel.name, "ice", None, (diag,), (), {}), Record()


def _progress(enabled: bool, n: int, total: int, name: str) -> None:
    if enabled:
        end = "\n" if n == total else ""
        print(f"\r[{n}/{total}] {name[:40]:40}", end=end, file=sys.stderr, flush=True)


def _outcomes(kernels: list[Any], tgt: Any, compat: bool, dump_ir: str | None, jobs: int | None,
              cache: Path | None, imported: Record, terminal: bool) -> tuple[dict[int, Outcome], dict | None]:
    """Each kernel's outcome: from `cache` (None: no cache) while everything its compile
    read is unchanged, else compiled (and cached with what it read); and the union of what
    they all read (None: some outcome is not cached)."""
    outcomes: dict[int, Outcome] = {}
    # the key hashes the compiler's sources: not worked out when there is no cache to ask
    keys = [_cache_key(k, tgt, compat) if cache is not None else "" for k in kernels]
    misses = []
    every: dict[str, dict] | None = {} if cache is not None else None
    for i, key in enumerate(keys):
        hit = None if cache is None else _cache_get(cache, key)
        if hit is None:
            misses.append(i)
        else:
            outcomes[i] = hit[0]
            every = _union(every, hit[1])
    progress = terminal and sys.stderr.isatty() and len(misses) > 4
    fresh = _compile_all([kernels[i] for i in misses], tgt, compat, dump_ir, jobs or os.cpu_count() or 1, progress)
    for i, (outcome, read) in zip(misses, fresh):
        outcomes[i] = outcome
        if cache is not None:
            every = _union(every, _cache_put(cache, keys[i], outcome, read | imported))
    return outcomes, every


def _union(every: dict | None, deps: dict | None) -> dict | None:
    if every is None or deps is None:
        return None
    return {part: every.get(part, {}) | deps.get(part, {})
            for part in ("files", "env", "stats", "dirs", "modules", "links")}


def run_compile(paths: list[str], out_dir: str, *, backend: str = "npu", target: str | None = None,
                pattern: str | None = None, dump_ir: str | None = None, jobs: int | None = None,
                compat: bool = True, fmt: str = "human", out: TextIO | None = None, cached: bool = True,
                color: str | None = None, dump_schedule: str | None = None, deny_warnings: bool = False) -> int:
    """Compile every kernel under `paths` into `out_dir`; return the exit status. With
    `deny_warnings` (`-D warnings`) a kernel with a warning is refused with it."""
    out = out or sys.stdout
    if backend == "typecheck":
        return run_check(paths, pattern, fmt, out, target=target, color=color, jobs=jobs,
                         deny_warnings=deny_warnings)
    if backend != "npu":
        print(f"error[USAGE]: unknown backend {backend!r} for compile (npu or typecheck)", file=out)
        return EXIT_USAGE
    try:
        tgt = load_target_spec(target)
    except Exception as e:  # noqa: BLE001 - a bad target file is a usage error
        print(f"error[USAGE]: cannot load target {target!r}: {e}", file=out)
        return EXIT_USAGE
    for flag, place in (("-o", out_dir), ("--dump-ir", dump_ir), ("--dump-schedule", dump_schedule)):
        problem = None if place is None else writable_dir(Path(place))
        if problem:  # found before compiling anything, not after
            print(f"error[USAGE]: {flag} {place}: {problem}", file=out)
            return EXIT_USAGE
    with recording() as imported:
        found = discover(paths, pattern)
    imported.files |= user_modules()
    duplicates = _duplicates(found.kernels)
    dup_names = unusable_names(found.kernels)
    errors = list(found.errors) + duplicates + [e for e in [found.nothing_found(paths, pattern)] if e]
    kernels = [k for k in found.kernels if k.name not in dup_names]
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    use_cache = cached and not dump_ir and _usable_cache(directory / CACHE_DIR)
    outcomes, deps = _outcomes(kernels, tgt, compat, dump_ir, jobs, directory / CACHE_DIR if use_cache else None,
                               imported, out is sys.stdout)
    if deny_warnings:
        outcomes = {i: deny(o) for i, o in outcomes.items()}
    manifest, manifest_text = write_outputs(directory, kernels, outcomes, found.files, errors, tgt, dump_schedule)
    status = max([EXIT_ICE if o.status == "ice" else kernel_status(o.diagnostics) for o in outcomes.values()],
                 default=EXIT_OK)
    status = EXIT_USAGE if errors else status
    colored = use_color(color, out) and fmt == "human"
    report = io.StringIO()
    _report(errors, [outcomes[i] for i in range(len(kernels))], kernels, fmt, report, status, colored)
    out.write(report.getvalue())
    if deps is not None and not errors and dump_schedule is None:
        key = invocation_key(paths, out_dir, target, pattern, compat, fmt, use_color(color, out), deny_warnings)
        save_record(directory, key, paths, target, deps, manifest, manifest_text, report.getvalue(), status)
    return status


def _report(errors: list[Any], outcomes: list[Outcome], kernels: list[Any], fmt: str, out: TextIO,
            status: int, colored: bool = False) -> None:
    report_errors(errors, fmt, out, colored)
    counts: Counter[str] = Counter()
    for kernel, outcome in zip(kernels, outcomes):
        counts[outcome.status] += 1
        every = outcome.diagnostics + outcome.warnings
        if fmt == "json":
            kernel_record(kernel.name, kernel.file_display, outcome.status, every, out)
            continue
        if fmt == "github" and every:
            print(render_all(every, "github"), file=out)
        detail = f"{outcome.code}" if outcome.code else f"{kernel.name}.visa"
        print(f"{outcome.status:8} {kernel.name:28} {detail}", file=out)
        if fmt == "human" and every:
            print(paint(render_all(every, "human"), colored) + "\n", file=out)
    report_summary("compiled", len(outcomes), counts, len(errors), status, fmt, out)
