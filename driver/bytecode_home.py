"""Where Python keeps npu-opt's bytecode when the checkout cannot hold it.

Python writes a module's bytecode to `__pycache__` beside its source. In a checkout on a
read-only mount, or a system install shipped without bytecode, it cannot: every command
then compiles each of the ~230 source files it loads again, about 0.3 s of CPU, more than
the rest of a one-kernel compile (issue 38 item 6). `keep_bytecode_in_cache` points
Python's bytecode at `bytecode/` in npu-opt's user cache (`sys.pycache_prefix`, the
standard setting for read-only source trees) in exactly that case, so the second command
runs as fast as from a writable checkout. It changes nothing when the bytecode is there,
when Python can write it, when the user chose a prefix (`PYTHONPYCACHEPREFIX`, `-X
pycache_prefix`) or asked for no bytecode at all (`PYTHONDONTWRITEBYTECODE`, `-B`).
Child Python processes (`--jobs` workers, tune's) inherit the choice through
`PYTHONPYCACHEPREFIX`.

The bytecode kept there is checked before it runs (issue 55, item 5): Python trusts a
`.pyc` whose header matches its source, so one damaged byte after the header ran as wrong
code or failed every command until the file was deleted. Once the prefix is chosen,
sources load through `_CheckedLoader`, which writes the CRC-32 of each `.pyc` it keeps
there after its bytes (Python's own reader ignores what follows the code) and, reading
one, takes it only when that checksum matches: any other `.pyc` (damaged, or written by a
process without the check) is compiled from its source again and written anew.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import zlib

import driver
from ir.lark_cache import cache_dir

__all__ = ["keep_bytecode_in_cache"]


def _checkout_holds_bytecode(cached: str | None) -> bool:
    """Whether the package's own bytecode file `cached` exists or Python may create it."""
    if not cached:
        return True  # loaded some other way (a zip, a frozen build): nothing to redirect
    if os.path.exists(cached):
        return True
    folder = os.path.dirname(cached)
    if os.path.isdir(folder):
        return os.access(folder, os.W_OK | os.X_OK)
    if os.path.lexists(folder):
        return False  # a file stands where the `__pycache__` folder would go
    return os.access(os.path.dirname(folder), os.W_OK | os.X_OK)


def keep_bytecode_in_cache() -> str | None:
    """Point `sys.pycache_prefix` at the user cache when the checkout holds no bytecode and
    cannot take it; the prefix chosen, or None when nothing changed."""
    if sys.pycache_prefix is not None or sys.dont_write_bytecode:
        return None
    if _checkout_holds_bytecode(getattr(driver, "__cached__", None)):
        return None
    prefix = str(cache_dir() / "bytecode")
    try:
        os.makedirs(prefix, exist_ok=True)
    except OSError:
        return None  # no writable cache either: Python compiles in memory, as before
    sys.pycache_prefix = prefix
    os.environ.setdefault("PYTHONPYCACHEPREFIX", prefix)
    _check_bytecode_in(prefix)
    return prefix


def _check_bytecode_in(prefix: str) -> None:
    """Sources are loaded by `_CheckedLoader` from now on (for modules not loaded yet)."""
    _CheckedLoader.home = os.path.join(prefix, "")
    m = importlib.machinery
    hook = m.FileFinder.path_hook((m.ExtensionFileLoader, m.EXTENSION_SUFFIXES), (_CheckedLoader, m.SOURCE_SUFFIXES),
                                  (m.SourcelessFileLoader, m.BYTECODE_SUFFIXES))  # Python's own three, in its order
    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.clear()  # the folders' finders are made again, by the hook


class _CheckedLoader(importlib.machinery.SourceFileLoader):
    """Python's loader of a source file, whose bytecode in the bytecode home carries the
    CRC-32 of its bytes after them."""

    home = ""  # the prefix, ending in a separator

    def get_data(self, path: str) -> bytes:
        data = super().get_data(path)
        if not path.startswith(self.home):
            return data
        body, checksum = data[:-4], data[-4:]
        if len(data) < 20 or zlib.crc32(body).to_bytes(4, "little") != checksum:
            raise OSError(f"damaged bytecode: {path}")  # Python then compiles the source, and keeps it again
        return body

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:
        if path.startswith(self.home):
            data = bytes(data) + zlib.crc32(data).to_bytes(4, "little")
        super().set_data(path, data, _mode=_mode)
