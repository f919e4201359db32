"""One process compiles a new signature of a kernel; the others wait for it and load its cache entry.

numba writes a kernel's disk-cache entry only when the compile ends, so processes that
start together (pytest-xdist's workers, a tuner's pool) and reach the same new signature
each compile it. `guard` makes a cached kernel take an exclusive lock, a file named for
the kernel in its cache folder, around the compile of a signature it has not loaded.
numba looks in the disk cache before it compiles, so a process that waited finds the
entry the holder saved and loads it. (The lock also keeps two processes that compile two
signatures of one kernel from overwriting each other's index entry: numba reads, adds to
and rewrites a kernel's index.)

- Calls never take it: numba's dispatcher calls `compile` only when no compiled
  signature matches the arguments, and `compile` returns before the lock when the
  signature was loaded meanwhile.
- The lock is `fcntl.flock` on a file opened for the one hold: the system drops it when
  the holder exits or dies. A waiter that has waited `WAIT_MAX` seconds compiles without
  it. Without `fcntl` (Windows), or when the lock file cannot be opened (the folder cannot
  be written to), a process compiles as it did before, unlocked.
- It is taken inside numba's compiler lock, which serialises the compiles of one
  process: threads of one process never wait on each other's file lock. A kernel's
  compile takes its callees' locks inside its own, and a kernel module's kernels call only
  those before them (`compile.compiled`), so no two processes wait on each other in a cycle.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:   # Windows: no advisory file locks; compiles go unlocked, as before
    fcntl = None  # type: ignore[assignment]

__all__ = ["WAIT_MAX", "WAITED", "guard", "hold", "lock_path"]

WAIT_MAX = 300.0
"""Seconds a process waits for another's compile before compiling itself (a held lock
whose holder is alive but stuck, e.g. stopped in a debugger)."""
WAITED = [0]
"""How many compiles of this process found the lock held and waited for it."""
_POLL = (0.005, 0.1)
"""The first and the longest pause between two tries of a held lock, in seconds."""
_OPEN: set[int] = set()
"""The lock files this process has open (held or waited for)."""


def lock_path(dispatcher: Any) -> Path | None:
    """The lock file of a numba kernel: in the folder of its cache entries, named as numba
    names its index (function and first line); None for a kernel without a disk cache."""
    folder = getattr(getattr(dispatcher, "_cache", None), "cache_path", None)
    if folder is None:
        return None
    code = dispatcher.py_func.__code__
    return Path(folder) / f"{dispatcher.py_func.__qualname__}-{code.co_firstlineno}.lock"


@contextlib.contextmanager
def hold(path: Path, wait: float | None = None) -> Iterator[bool]:
    """Hold the exclusive lock on `path` for the block, waiting up to `wait` seconds
    (`WAIT_MAX` by default) while another process holds it; yields whether it is held
    (False: no `fcntl`, no lock file, or the wait ran out; the block runs anyway)."""
    if fcntl is None:
        yield False
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield False
        return
    _OPEN.add(fd)
    try:
        yield _take(fd, WAIT_MAX if wait is None else wait)
    finally:
        if fd in _OPEN:   # (a child forked inside the block has closed its copy)
            _OPEN.discard(fd)
            os.close(fd)   # drops the lock with the file description


def _drop_inherited() -> None:
    """In a child forked while a lock was held: close the child's copies of the lock files,
    so that the lock goes when the parent lets it go (a file description's lock lasts
    while any process keeps it open) and the child's own compiles do not wait on it."""
    for fd in _OPEN:
        os.close(fd)
    _OPEN.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_inherited)


def _take(fd: int, wait: float) -> bool:
    """Whether the lock on `fd` was taken within `wait` seconds."""
    end = time.monotonic() + wait
    pause = _POLL[0]
    waited = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        except OSError:   # a file system without locks
            return False
        if not waited:
            waited = True
            WAITED[0] += 1
        if time.monotonic() >= end:
            return False
        time.sleep(pause)
        pause = min(2 * pause, _POLL[1])


def guard(module: Any, dispatcher: Any) -> Any:
    """`dispatcher` (a numba kernel, `module` numba) with its compile of a signature it
    does not hold taken under the kernel's lock (module docstring); a kernel without a
    disk cache as it is."""
    path = lock_path(dispatcher)
    if path is None or fcntl is None:
        return dispatcher
    plain = dispatcher.compile
    compiler_lock = module.core.compiler_lock.global_compiler_lock
    normalize = module.core.sigutils.normalize_signature

    def compile(sig: Any) -> Any:
        with compiler_lock:   # re-entrant; numba's compile takes it too
            if tuple(normalize(sig)[0]) in dispatcher.overloads:
                return plain(sig)
            with hold(path):
                return plain(sig)

    dispatcher.compile = compile   # numba's own calls (a call's miss, a caller's typing) look it up here
    return dispatcher
