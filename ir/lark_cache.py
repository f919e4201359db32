"""Lark parsers built once and reused across processes.

Building an LALR parser from its grammar costs tens of milliseconds, more than most
commands spend parsing. `lalr_parser` keeps the built tables in a file named by a hash of
the grammar, the options and the lark version (lark's own `cache=` option), in the user's
cache directory; a later process loads them instead of rebuilding. When no cache file can
be written the parser is simply built each time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

try:  # CPython's own SHA-256 (driver/replay.py): `import hashlib` loads OpenSSL, and `import ir`
    if sys.version_info >= (3, 12):  # loads this module (ir/attrs_code_cache.py) for `cache_dir`
        from _sha2 import sha256  # type: ignore[import-not-found]
    else:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef]
except ImportError:
    from hashlib import sha256  # type: ignore[assignment]

__all__ = ["cache_dir", "lalr_parser"]


def cache_dir() -> Path:
    """`$NPU_OPT_CACHE_DIR`, else `$XDG_CACHE_HOME/npu-opt`, else `~/.cache/npu-opt`."""
    explicit = os.environ.get("NPU_OPT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "npu-opt"


def lalr_parser(grammar: str, **options: Any) -> Any:
    """`lark.Lark(grammar, parser="lalr", **options)`, its tables cached on disk."""
    import lark  # here, not at the top: `cache_dir` alone (explain's cache) needs no parser

    key = repr((grammar, sorted(options.items()), lark.__version__)).encode()
    path = cache_dir() / f"lark-{sha256(key).hexdigest()[:24]}.cache"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return lark.Lark(grammar, parser="lalr", cache=str(path), **options)
    except OSError:
        return lark.Lark(grammar, parser="lalr", **options)
