"""What `npu-opt compile` writes into `-o DIR`: one `<kernel>.visa` or `<kernel>.fail` per
kernel (the stale file of the other kind removed), `manifest.json`, and nothing else of
a run over other files that would pass for this run's verdict (docs/ci.md).

Every file is written through `write_atomic` (an exclusive temporary file, renamed). A
file that cannot be written (`<kernel>.visa` is a directory, the disk is full) is this
run's USAGE error, named in the report; the other kernels are still written.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
from hashlib import sha256
from pathlib import Path
from typing import Any

from ir.diagnostic import Diagnostic, render_all
from driver.check_command import denied
from npu_opt.compile_api import Outcome, npu_opt_version
from driver.discover import LoadError
from driver.replay import write_atomic
from driver.schedule_command import schedule_manifest_fields
from tu_ops.target import target_sha256
import tempfile

__all__ = ["fail_text", "target_hash", "deny", "warm_manifest", "writable_dir", "write_outputs"]


def fail_text(diagnostics: tuple[Diagnostic, ...], warnings: tuple[Diagnostic, ...]) -> str:
    """The `.fail` file of docs/ci.md: rendered diagnostics, `--- json`, one object a line."""
    every = tuple(diagnostics) + tuple(warnings)
    return render_all(every, "human") + "\n--- json\n" + "\n".join(d.json_line() for d in every) + "\n"


def target_hash(target: Any) -> str:

    return getattr(target, "file_sha256", None) or target_sha256(target)


def write_outputs(directory: Path, kernels: list[Any], outcomes: dict[int, Outcome], files: tuple[str, ...],
                  errors: list[Any], target: Any, dump_schedule: str | None) -> tuple[dict, str]:
    """Write each kernel's artifact and the manifest into `directory`; remove what the
    previous manifest listed that this run replaces (`remove_unlisted`). A write that
    fails is appended to `errors`. Returns the manifest and its text."""
    entries = []
    for i, kernel in enumerate(kernels):
        try:
            entries.append(_write(directory, kernel, outcomes[i], target, dump_schedule))
        except OSError as e:  # <kernel>.visa is a directory, the disk is full...
            errors.append(LoadError(str(directory), f"cannot write the artifact of `{kernel.name}`: "
                                                    f"{e.strerror or e} ({e.filename or directory})"))
    _remove_unlisted(directory, files, entries)
    manifest: dict[str, Any] = {"npu_opt_version": npu_opt_version(),
                                "target": {"name": target.name, "sha256": target_hash(target)},
                                "kernels": entries}
    if errors:
        manifest["errors"] = [e.to_json() for e in errors]
    manifest_text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    try:
        write_atomic(directory / "manifest.json", manifest_text)
    except OSError as e:
        errors.append(LoadError(str(directory / "manifest.json"), f"cannot write the manifest: {e.strerror or e}"))
    return manifest, manifest_text


def deny(outcome: Outcome) -> Outcome:
    """`-D warnings`: an ok outcome with warnings is refused, its warnings as its errors."""
    if outcome.status != "ok" or not outcome.warnings:
        return outcome
    return Outcome(outcome.kernel, "refused", None, denied(outcome.warnings), (), outcome.timings_ms)


def warm_manifest(manifest: dict[str, Any]) -> str:
    """The manifest text a run answering every kernel from the cache writes: no timings."""
    kernels = [entry | {"timings_ms": {}} for entry in manifest["kernels"]]
    return json.dumps(manifest | {"kernels": kernels}, indent=2, ensure_ascii=False) + "\n"


def writable_dir(path: Path) -> str | None:
    """Why files cannot be written into directory `path` (created if missing), or None."""
    if path.exists() and not path.is_dir():
        return "exists and is not a directory"
    try:
        path.mkdir(parents=True, exist_ok=True)

        with tempfile.TemporaryFile(dir=path, prefix=".npu-opt-probe."):  # O_EXCL, unpredictable name
            pass
    except OSError as e:
        return f"cannot write there ({e.strerror or e})"
    return None


def _norm(file: str) -> str:
    return posixpath.normpath(file.replace(os.sep, "/"))


def _remove_unlisted(directory: Path, files: tuple[str, ...], entries: list[dict[str, Any]]) -> None:
    """Remove the artifacts the previous manifest listed for one of `files` (the files this
    invocation loaded, or failed to load) that this invocation's entries do not list: the
    `.visa` of a renamed or deleted kernel, or of a file that no longer imports; and every
    `.fail` it listed that this invocation did not write (CI reads `*.fail` as this run's
    refusals: one left by a run over other files would be a false failure)."""
    try:
        previous = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))["kernels"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    ours = {_norm(f) for f in files}
    listed = {e["artifact"] for e in entries}
    for entry in previous if isinstance(previous, list) else []:
        artifact = entry.get("artifact") if isinstance(entry, dict) else None
        if not isinstance(artifact, str) or artifact in listed:
            continue
        if _norm(str(entry.get("file"))) not in ours and not artifact.endswith(".fail"):
            continue  # another file's artifact: kept (its `.fail` is not: it is no verdict of this run)
        if Path(artifact).name == artifact and artifact.endswith((".visa", ".fail")):
            with contextlib.suppress(OSError):
                (directory / artifact).unlink(missing_ok=True)


def _write(directory: Path, kernel: Any, outcome: Outcome, target: Any, dump_schedule: str | None) -> dict[str, Any]:
    ok = outcome.status == "ok"
    name = f"{kernel.name}.visa" if ok else f"{kernel.name}.fail"
    stale = directory / (f"{kernel.name}.fail" if ok else f"{kernel.name}.visa")
    data = outcome.text if ok else fail_text(outcome.diagnostics, outcome.warnings)
    write_atomic(directory / name, data)
    if stale.exists():
        stale.unlink()
    file = _norm(kernel.file)
    return {"name": kernel.name, "qualname": f"{file.removesuffix('.py').replace('/', '.')}.{kernel.__qualname__}",
            "file": file, "status": outcome.status, "code": outcome.code, "artifact": name,
            "sha256": sha256(data.encode("utf-8")).hexdigest(),
            "timings_ms": outcome.timings_ms, "makespan": None,
            **(_schedule_fields(data, kernel.name, target, dump_schedule, outcome) if ok else {})}


def _schedule_fields(text: str, kernel: str, target: Any, dump_schedule: str | None, outcome: Outcome) -> dict[str, Any]:
    """The manifest's schedule fields: the makespan the compile (or the cache) kept, else
    worked out from the artifact (parsed from `text` when not at hand)."""
    if outcome.makespan is not None and dump_schedule is None:
        return {"makespan": outcome.makespan}
    return schedule_manifest_fields(text, kernel, target, dump_schedule, outcome.artifact)
