"""What a compile leaves for the next one: the run record a warm `npu-opt compile` replays (driver/replay.py, whose module doc
says when it holds). Apart from the replay so that a warm compile, which only reads the
record, does not compile this module's source."""

from __future__ import annotations

import marshal
import os
from hashlib import sha256
from pathlib import Path
from typing import Any

from driver.compile_outputs import warm_manifest
from driver.fingerprint import _compiler_identity
from driver.replay import _MAGIC, RECORD, _listing, digest, write_atomic

__all__ = ["save_record"]


def save_record(directory: Path, key: str, paths: list[str], target: str | None, deps: dict[str, Any],
                manifest: dict[str, Any], manifest_text: str, report: str, status: int) -> None:
    """Write the run record of a compile whose every kernel is cached (see the module doc)."""
    files = dict(deps.get("files", {}))
    if target is not None and Path(target).is_file():
        files[os.path.abspath(target)] = digest(target)
    fingerprint, stamp = _compiler_identity()  # of the sources as the run read them
    artifacts = [[entry["artifact"], entry["sha256"]] for entry in manifest["kernels"]]
    record = {"key": key, "fingerprint": fingerprint, "sources_stamp": stamp,
              "listing": _listing(paths),
              "deps": {**{part: dict(deps.get(part, {})) for part in ("env", "stats", "dirs", "modules", "links")},
                       "files": files},
              "manifest_sha256": sha256(manifest_text.encode()).hexdigest(),
              "warm_manifest": warm_manifest(manifest), "artifacts": artifacts, "report": report, "status": status}
    cache = directory / ".npu-opt-cache"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        write_atomic(cache / RECORD, _MAGIC + marshal.dumps(record))  # plain data: replay.load_record reads it
    except OSError:
        pass  # a read-only or file-shaped cache: the next run compiles (its per-kernel cache may answer)
