"""A table kept across processes in one file of the user's cache directory, written at exit.

Start-up caches (the code attrs writes for our classes, ir/attrs_code_cache.py; the syntax
trees of mapping texts, ir/mapping/parser.py) keep many small entries. A file per entry cost
a warm start-up an open and a read per entry, and a first one a file written per entry; a
bundle is one marshal file, read whole at the first lookup of a process (each entry built
only when looked up: an entry is kept as its own marshal inside the file's) and written whole
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

__all__ = ["FORMAT", "KeptBundle", "bundle", "flush", "text_key"]


def text_key(text: str) -> str:
    """A key for a text: two checksums and the length (the texts are our own, made by our
    code, so a clash of all three is not a concern)."""
    data = text.encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"


FORMAT = "entries marshalled one by one"  # a file of the former layout (entries in one marshal) reads as empty


class KeptBundle:
    """The entries of one bundle file: those read from it (`raw`: each entry's marshal bytes,
    decoded at its first `get`), those decoded (`values`), and those this process added
    (`new`), written back by `write`. A process reads the file's bytes whole but builds only
    the entries it looks up: a warm bundle of thousands of mapping trees cost a check that
    looks up a few dozen some 50-300 ms of building the rest (issue 58)."""

    # Past this many entries a write keeps only what this process read or added, so the
    # entries of older versions (classes, grammars) do not pile up in the file.
    LIMIT = 8192

    def __init__(self, path: str, salt: str, valid: Callable[[Any], bool]) -> None:
        self.path, self.salt, self.valid = path, salt, valid
        self.raw: dict[str, bytes] = self._read()
        self.values: dict[str, Any] = {}
        self.new: dict[str, Any] = {}
        self.used: set[str] = set()

    def __contains__(self, key: str) -> bool:
        return key in self.values or key in self.raw

    def get(self, key: str) -> Any:
        """The entry kept under `key`, or None (also for an entry that does not decode to a
        valid value: it is dropped)."""
        value = self.values.get(key)
        if value is None:
            data = self.raw.get(key)
            if data is None:
                return None
            try:
                value = marshal.loads(data)
            except (ValueError, EOFError, TypeError):
                value = None
            if value is None or not self.valid(value):
                del self.raw[key]
                return None
            self.values[key] = value
        self.used.add(key)
        return value

    def add(self, key: str, value: Any) -> None:
        """Keep `value` (marshal-able) under `key`, in the file when the process exits."""
        if os.getpid() not in _EXIT_REGISTERED:
            _register_exit()
        self.values[key] = self.new[key] = value

    def write(self) -> None:
        """Add the new entries to the file as it is now (another process may have added to it)."""
        if not self.new:
            return
        merged = self._read()
        if len(merged) + len(self.new) > self.LIMIT:
            merged = {k: v for k, v in self.raw.items() if k in self.used}
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            merged.update((k, marshal.dumps(v)) for k, v in self.new.items())
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            payload = marshal.dumps(merged)
            with open(tmp, "wb") as f:
                f.write(marshal.dumps((FORMAT, self.salt, zlib.crc32(payload), payload)))
            os.replace(tmp, self.path)  # whole or not at all, whichever process writes it
        except (OSError, ValueError):  # ValueError: an entry marshal cannot write
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.used.update(self.new)
        self.new = {}

    def _read(self) -> dict[str, bytes]:
        try:
            with open(self.path, "rb") as f:
                form, salt, checksum, payload = marshal.loads(f.read())
            if form != FORMAT or salt != self.salt or type(payload) is not bytes or zlib.crc32(payload) != checksum:
                return {}
            entries = marshal.loads(payload)
        except (OSError, ValueError, EOFError, TypeError):
            return {}
        if type(entries) is not dict:
            return {}
        return {k: v for k, v in entries.items() if type(k) is str and type(v) is bytes}


def bundle(name: str, salt: str, valid: Callable[[Any], bool]) -> KeptBundle:
    """The bundle `name` (a file name stem) for `salt`, in the cache directory the environment
    names now (ir/lark_cache.py), read at its first use in this process."""
    env = tuple(os.environ.get(k) for k in ("NPU_OPT_CACHE_DIR", "XDG_CACHE_HOME", "HOME"))
    found = _BUNDLES.get((name, env))
    if found is None or found.salt != salt:
        # the layout in the name too: a version of the other layout keeps a file of its own
        path = str(cache_dir() / f"{name}-{zlib.crc32((FORMAT + salt).encode()):08x}")
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
