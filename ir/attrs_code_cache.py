"""The methods attrs writes for each class (`__init__`, `__eq__`, `__hash__`, ...), compiled
once and reused across processes.

attrs generates the source of those methods when a class is made and compiles it every
time; with a few hundred op, type and record classes that compiling is a large part of
starting the compiler. `install()` puts a cache in front of attrs' compile step: the code
object of each generated script is kept, by a hash of the script and its file name, in one
file of the user's cache directory (`ir.lark_cache.cache_dir`) named by the Python and
attrs versions, and a later process loads it instead of compiling. The same script always
compiles to the same code, so classes made either way behave alike; anything unexpected
(another attrs layout, an unreadable or unwritable file) falls back to attrs' own compile.

A generated `__hash__` starts its tuple with a number attrs draws per process (a hash of the
class's name, randomised as every string hash is): the key leaves that number out, so the
cached method hashes with an earlier process's number. Hashes only have to agree within a
process, and they do: every instance of the class hashes through the one method.
"""

from __future__ import annotations

import atexit
import hashlib
import marshal
import os
import re
import sys
import tempfile
from typing import Any

import attr
from attr import _make

from ir.lark_cache import cache_dir

__all__ = ["install"]

_CODES: dict[bytes, Any] = {}
_USED: set[bytes] = set()
_MAX_KEPT = 3000  # past this many codes, a save keeps only those this process used
_SALT = re.compile(r"(hash\(\(\s*)-?\d+,")
_STATE = {"installed": False, "new": 0, "path": None}


def _path() -> str:
    tag = hashlib.sha256(f"{sys.version}|{attr.__version__}".encode()).hexdigest()[:16]
    return os.path.join(str(cache_dir()), f"attrs-code-{tag}.marshal")


def install() -> None:
    """Cache attrs' generated code from now on in this process (once; a no-op when attrs has
    no `_make._compile_and_eval` of the known signature)."""
    if _STATE["installed"]:
        return
    _STATE["installed"] = True
    original = getattr(_make, "_compile_and_eval", None)
    if original is None or original.__code__.co_varnames[:4] != ("script", "globs", "locs", "filename"):
        return
    _STATE["path"] = _path()
    try:
        with open(_STATE["path"], "rb") as f:
            loaded = marshal.load(f)
        if isinstance(loaded, dict):
            _CODES.update(loaded)
    except (OSError, EOFError, ValueError, TypeError):
        pass

    def compile_and_eval(script: str, globs: Any, locs: Any = None, filename: str = "") -> None:
        keyed = _SALT.sub(r"\g<1>0,", script)
        key = hashlib.blake2b(f"{filename}\0{keyed}".encode(), digest_size=16).digest()
        code = _CODES.get(key)
        _USED.add(key)
        if code is None:
            code = compile(script, filename, "exec")
            _CODES[key] = code
            _STATE["new"] += 1
        eval(code, globs, locs)  # noqa: S307 - attrs' own generated methods, as attrs evals them

    _make._compile_and_eval = compile_and_eval
    atexit.register(_save)


def _save() -> None:
    """Write the codes back when this process compiled new ones (atomically: concurrent
    processes each replace the file with a complete one)."""
    if not _STATE["new"] or _STATE["path"] is None:
        return
    path = _STATE["path"]
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".attrs-code-")
        kept = _CODES if len(_CODES) <= _MAX_KEPT else {k: v for k, v in _CODES.items() if k in _USED}
        with os.fdopen(fd, "wb") as f:
            marshal.dump(kept, f)
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass
