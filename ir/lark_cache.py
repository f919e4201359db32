"""Lark parsers built once: shipped beside their grammars, else cached per user.

Building an LALR parser from its grammar costs tens of milliseconds (lark first builds a
parser for its own grammar language), more than most commands spend parsing. A grammar of
npu-opt has its tables shipped beside it: `mapping.lark`'s in `mapping.lalr`, lark's own
serialized parser (`Lark.memo_serialize`, the form `Lark.load` reads) written by `python -m
driver.lark_tables`. They are used when they were made from this very grammar text, with
these options, by the installed lark version; a first process after an install then loads
the parser in about a millisecond. Any other grammar, or another lark version, falls back
to building, with the built tables kept in a file of the user's cache directory named by a
hash of the grammar, the options and the lark version (lark's own `cache=` option); a later
process loads them instead of rebuilding. When no cache file can be written the parser is
simply built each time.
"""

from __future__ import annotations

import marshal
import os
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import lark

__all__ = ["cache_dir", "lalr_parser", "table_file", "table_key"]


def cache_dir() -> Path:
    """`$NPU_OPT_CACHE_DIR`, else `$XDG_CACHE_HOME/npu-opt`, else `~/.cache/npu-opt`."""
    explicit = os.environ.get("NPU_OPT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "npu-opt"


def table_file(grammar_file: Path) -> Path:
    """Where the shipped tables of `grammar_file` live: beside it, `.lalr` for `.lark`."""
    return grammar_file.with_suffix(".lalr")


def table_key(grammar: str, options: dict[str, Any], lark_version: str) -> str:
    """What a parser's tables depend on: the grammar text, the options and lark's version."""
    return sha256(repr((grammar, sorted(options.items()), lark_version)).encode()).hexdigest()


def lalr_parser(grammar_file: Path, **options: Any) -> lark.Lark:
    """`lark.Lark(<grammar_file's text>, parser="lalr", **options)`: from the shipped tables
    when they match, else built, its tables cached on disk."""
    import lark  # here, not at the top: `cache_dir` alone (explain's cache) needs no parser

    grammar = grammar_file.read_text(encoding="utf-8")
    key = table_key(grammar, options, lark.__version__)
    shipped = _shipped(table_file(grammar_file), key)
    if shipped is not None:
        return lark.Lark.load(shipped)
    path = cache_dir() / f"lark-{key[:24]}.cache"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return lark.Lark(grammar, parser="lalr", cache=str(path), **options)
    except OSError:
        return lark.Lark(grammar, parser="lalr", **options)


def _shipped(path: Path, key: str) -> dict[str, Any] | None:
    """The serialized parser in the table file `path` when it was made for `key`, else None
    (no such file, another grammar or lark version, or a file marshal cannot read). A table
    file (driver/lark_tables.py writes them) is the marshal of (lark's version, the key,
    lark's serialized parser: {"data": ..., "memo": ...})."""
    try:
        _version, made_for, parser = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return parser if made_for == key and type(parser) is dict else None
