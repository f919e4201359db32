"""A table kept across processes in one file of the user's cache directory, written at exit.

Start-up caches (the code attrs writes for our classes, ir/attrs_code_cache.py; the syntax
trees of mapping texts, ir/mapping/parser.py) keep many small entries. A file per entry cost
a warm start-up an open and a read per entry, and a first one a file written per entry; a
bundle is one marshal file, read whole at the first lookup of a process and written whole
(merged with what other processes wrote meanwhile, by a rename) when the process exits, if
it added anything. The file holds its salt (what its entries depend on: a grammar, an attrs
installation, the bytecode magic) and the CRC-32 of its entries' bytes, made when it was
written (a checksum, not SHA-256: it finds any damage a disk or a copy does, a flipped byte
or a burst, in a tenth of a millisecond per bundle where SHA-256 takes milliseconds): a file
of another salt, or one whose entries do not match their checksum, reads as empty (an
entry of code with one byte changed could run), and a failure to write costs only the next
process's speed.

A process leaves by `atexit`, except a multiprocessing worker (a compile's or check's
`--jobs` pool), which leaves by `os._exit` after its exit finalizers: the bundle registers
one of those too, with the pid of the process that added the entry.
"""

from __future__ import annotations

import atexit
import marshal
import os
import sys
import zlib
from collections.abc import Callable
from typing import Any

from ir.lark_cache import cache_dir

__all__ = ["KeptBundle", "bundle", "flush", "text_key"]


def text_key(text: str) -> str:
    """A key for a text: two checksums and the length (the texts are our own, made by our
    code, so a clash of all three is not a concern)."""
    data = text.encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"


class KeptBundle:
    """The entries of one bundle file: those read from it (`entries`), and those this process
    added (`new`), written back by `write`."""

    # Past this many entries a write keeps only what this process read or added, so the
    # entries of older versions (classes, grammars) do not pile up in the file.
    LIMIT = 8192

    def __init__(self, path: str, salt: str, valid: Callable[[Any], bool]) -> None:
        self.path, self.salt, self.valid = path, salt, valid
        self.entries: dict[str, Any] = self._read()
        self.new: dict[str, Any] = {}
        self.used: set[str] = set()

    def get(self, key: str) -> Any:
        """The entry kept under `key`, or None."""
        value = self.entries.get(key)
        if value is not None:
            self.used.add(key)
        return value

    def add(self, key: str, value: Any) -> None:
        """Keep `value` (marshal-able) under `key`, in the file when the process exits."""
        if os.getpid() not in _EXIT_REGISTERED:
            _register_exit()
        self.entries[key] = self.new[key] = value

    def write(self) -> None:
        """Add the new entries to the file as it is now (another process may have added to it)."""
        if not self.new:
            return
        merged = self._read()
        if len(merged) + len(self.new) > self.LIMIT:
            merged = {k: v for k, v in self.entries.items() if k in self.used}
        merged.update(self.new)
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            payload = marshal.dumps(merged)
            with open(tmp, "wb") as f:
                f.write(marshal.dumps((self.salt, zlib.crc32(payload), payload)))
            os.replace(tmp, self.path)  # whole or not at all, whichever process writes it
        except (OSError, ValueError):  # ValueError: an entry marshal cannot write
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.used.update(self.new)
        self.new = {}

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as f:
                salt, checksum, payload = marshal.loads(f.read())
            if salt != self.salt or type(payload) is not bytes or zlib.crc32(payload) != checksum:
                return {}
            entries = marshal.loads(payload)
        except (OSError, ValueError, EOFError, TypeError):
            return {}
        if type(entries) is not dict:
            return {}
        return {k: v for k, v in entries.items() if type(k) is str and self.valid(v)}


def bundle(name: str, salt: str, valid: Callable[[Any], bool]) -> KeptBundle:
    """The bundle `name` (a file name stem) for `salt`, in the cache directory the environment
    names now (ir/lark_cache.py), read at its first use in this process."""
    env = tuple(os.environ.get(k) for k in ("NPU_OPT_CACHE_DIR", "XDG_CACHE_HOME", "HOME"))
    found = _BUNDLES.get((name, env))
    if found is None or found.salt != salt:
        path = str(cache_dir() / f"{name}-{zlib.crc32(salt.encode()):08x}")
        found = _BUNDLES[name, env] = KeptBundle(path, salt, valid)
    return found


_BUNDLES: dict[tuple[str, tuple[str | None, ...]], KeptBundle] = {}
_EXIT_REGISTERED: set[int] = set()  # the pids that registered `flush` (a forked child has its own)


def _register_exit() -> None:
    _EXIT_REGISTERED.add(os.getpid())
    atexit.register(flush)
    util = sys.modules.get("multiprocessing.util")
    if util is not None:  # a multiprocessing worker leaves by os._exit, after these finalizers
        util.Finalize(None, flush, exitpriority=0)


def flush() -> None:
    """Write what this process added into its bundles (run at exit; tests call it)."""
    for kept in _BUNDLES.values():
        kept.write()
