"""What a compile leaves for the next one: the compiler's fingerprint (the cache's key)
and the run record a warm `npu-opt compile` replays (driver/replay.py, whose module doc
says when it holds). Apart from the replay so that a warm compile, which only reads the
record, does not compile this module's source."""

from __future__ import annotations

import functools
import marshal
import os
import time
from pathlib import Path
from typing import Any

from driver.replay import _MAGIC, RECORD, _listing, digest, sha256, stamp_of, walk_strings, write_atomic
from ir.version import VERSION

__all__ = ["compiler_fingerprint", "source_digest", "walk_paths", "save_record"]

_PACKAGES = ("ir", "npu_opt", "driver", "tu_ops", "visa", "backends")
_SOURCES = (".py", ".lark", ".toml")
_RACY_NS = 2_000_000_000


def _sources(roots: list[str]) -> list[tuple[str, str]]:
    """(root, path) of every source (.py, .lark, .toml) file under `roots`, in a fixed order."""
    every = []
    for root in roots:
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            found.extend(os.path.join(dirpath, f) for f in filenames if f.endswith(_SOURCES))
        every.extend((root, path) for path in sorted(found))
    return every


def source_digest(roots: list[str]) -> str:
    """A hash of the names and contents of every source file under `roots`."""
    digest = sha256()
    for root, path in _sources(roots):
        digest.update(os.path.relpath(path, root).encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


def source_stats(roots: list[str]) -> tuple[str, int, list[str]]:
    """A hash of the names, sizes, modification times and inodes of every source file
    under `roots` and of the directories holding them (a file added or removed changes
    its directory's time), the newest modification time (ns), and those paths in order."""
    paths = []
    for root in roots:
        for dirpath, dirnames, _ in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            paths.append(dirpath)
    paths += [path for _, path in _sources(roots)]
    stamp, newest = stamp_of(paths)
    return stamp or "", newest, paths


def _roots() -> list[str]:
    here = Path(__file__).resolve().parents[1]
    return [str(here / p) for p in _PACKAGES]


@functools.cache
def _compiler_identity() -> tuple[str, dict[str, Any] | None]:
    """`compiler_fingerprint()` and the stat hash of the same sources, taken first (None
    when some source was modified in the last `_RACY_NS`: a file edited again within one
    timestamp tick could keep its size and time, as git's index knows)."""
    stats, newest, paths = source_stats(_roots())
    digest = source_digest(_roots())
    stamp = {"stat": stats, "paths": paths} if newest < time.time_ns() - _RACY_NS else None
    return sha256(f"{VERSION}\0{digest}".encode()).hexdigest(), stamp


def compiler_fingerprint() -> str:
    """Version plus a hash of the compiler's own sources, so a cache entry made by other
    compiler code (an edited checkout with the same version number) is never reused."""
    return _compiler_identity()[0]


def walk_paths(paths: list[str]) -> tuple[list[Path], list[str]]:
    """`walk_strings` as paths (what discovery loads)."""
    files, missing = walk_strings(paths)
    return [Path(f) for f in files], missing


def save_record(directory: Path, key: str, paths: list[str], target: str | None, deps: dict[str, Any],
                manifest_text: str, warm_manifest: str, report: str, status: int) -> None:
    """Write the run record of a compile whose every kernel is cached (see the module doc)."""
    files = dict(deps.get("files", {}))
    if target is not None and Path(target).is_file():
        files[os.path.abspath(target)] = digest(target)
    import json

    fingerprint, stamp = _compiler_identity()  # of the sources as the run read them
    artifacts = [[entry["artifact"], entry["sha256"]] for entry in json.loads(warm_manifest)["kernels"]]
    record = {"key": key, "fingerprint": fingerprint, "sources_stamp": stamp,
              "listing": _listing(paths),
              "deps": {**{part: dict(deps.get(part, {})) for part in ("env", "stats", "dirs", "modules", "links")},
                       "files": files},
              "manifest_sha256": sha256(manifest_text.encode()).hexdigest(),
              "warm_manifest": warm_manifest, "artifacts": artifacts, "report": report, "status": status}
    cache = directory / ".npu-opt-cache"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        write_atomic(cache / RECORD, _MAGIC + marshal.dumps(record))  # plain data: replay.load_record reads it
    except OSError:
        pass  # a read-only or file-shaped cache: the next run compiles (its per-kernel cache may answer)
