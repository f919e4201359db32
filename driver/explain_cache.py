"""A disk cache of the example output `npu-opt explain` prints.

A page's example is run by the compiler itself (so it cannot drift from it), which costs
a trace or a compile: several times the interpreter's start-up. Its output depends only
on the page and on the compiler's code, so it is kept in the user cache directory
(`ir.lark_cache.cache_dir`) under a key made of both: the page's fields and the size and
modification time of every source file of the installed packages. Editing any source
file or page changes the key. An unwritable cache directory only means no caching. A
cached page starts with a line holding the SHA-256 of the rest, made when it was written:
a page that does not match it (damaged, truncated, not UTF-8) is rendered and written again.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from hashlib import sha256

from ir.lark_cache import cache_dir
from driver.fingerprint import _roots, source_stats
from driver.replay import write_atomic

__all__ = ["cached_output", "source_fingerprint"]

@functools.cache
def source_fingerprint() -> str:
    """A digest of the path, size, mtime and inode of every .py / .toml / .lark file of the
    packages and of their directories (the compile cache's stat stamp, driver/fingerprint.py)."""
    return source_stats(_roots())[0]


def cached_output(page_key: str, compute: Callable[[], str]) -> str:
    """`compute()`, read from the cache when this page and these sources produced it before."""
    key = sha256(f"{source_fingerprint()}\n{page_key}".encode()).hexdigest()[:32]
    path = cache_dir() / "explain" / f"{key}.txt"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        digest, _, body = path.read_bytes().partition(b"\n")
        if digest == sha256(body).hexdigest().encode():
            return body.decode("utf-8")
    text = compute()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        body = text.encode("utf-8")
        write_atomic(path, sha256(body).hexdigest().encode() + b"\n" + body)
    return text
