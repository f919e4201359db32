"""The compiler's fingerprint: its version and a hash of its own sources, the key of the
compile cache and of the run record (driver/replay.py, driver/run_record.py). Standard
library only, so that a warm replay whose stat stamp went stale can take
it cheaply."""

from __future__ import annotations

import functools
import os
import time
from hashlib import sha256
from pathlib import Path
from typing import Any

__all__ = ["compiler_fingerprint", "source_digest", "source_stats", "stamp_of"]


def stamp_of(paths: list[str]) -> tuple[str | None, int]:
    """`source_stats`'s hash and newest time for given paths (None: one is missing)."""
    lines = []
    newest = 0
    stat = os.stat
    for path in paths:
        try:
            st = stat(path)
        except OSError:
            return None, 0
        lines.append(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n")
        if st.st_mtime_ns > newest:
            newest = st.st_mtime_ns
    return sha256("".join(lines).encode()).hexdigest(), newest


_PACKAGES = ("ir", "npu_opt", "synth", "driver", "tu_ops", "visa", "backends")  # ir.location.OWN_PACKAGES
_SOURCES = (".py", ".lark", ".toml")
_RACY_NS = 2_000_000_000


def _sources(roots: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The directories under `roots`, and (root, path) of every source (.py, .lark, .toml)
    file in them, in a fixed order."""
    dirs, every = [], []
    for root in roots:
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            dirs.append(dirpath)
            found.extend(os.path.join(dirpath, f) for f in filenames if f.endswith(_SOURCES))
        every.extend((root, path) for path in sorted(found))
    return dirs, every


def source_digest(roots: list[str]) -> str:
    """A hash of the names and contents of every source file under `roots`."""
    digest = sha256()
    for root, path in _sources(roots)[1]:
        digest.update(os.path.relpath(path, root).encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


def source_stats(roots: list[str]) -> tuple[str, int, list[str]]:
    """A hash of the names, sizes, modification times and inodes of every source file
    under `roots` and of the directories holding them (a file added or removed changes
    its directory's time), the newest modification time (ns), and those paths in order."""
    dirs, sources = _sources(roots)
    paths = dirs + [path for _, path in sources]
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
    from ir.version import VERSION  # `import ir` sets up the IR's caches: a warm replay loads no ir

    stats, newest, paths = source_stats(_roots())
    digest = source_digest(_roots())
    stamp = {"stat": stats, "paths": paths} if newest < time.time_ns() - _RACY_NS else None
    return sha256(f"{VERSION}\0{digest}".encode()).hexdigest(), stamp


def compiler_fingerprint() -> str:
    """Version plus a hash of the compiler's own sources, so a cache entry made by other
    compiler code (an edited checkout with the same version number) is never reused."""
    return _compiler_identity()[0]
