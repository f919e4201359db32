"""Lark parsers built once: shipped beside their grammars, else cached per user.

Building an LALR parser from its grammar costs tens of milliseconds (lark first builds a
parser for its own grammar language), more than most commands spend parsing. A grammar of
npu-opt has its tables shipped beside it: `mapping.lark`'s in `mapping.lalr`, lark's own
serialized parser (`Lark.memo_serialize`, the form `Lark.load` reads) written by `python -m
driver.lark_tables`. They are used when they were made from this very grammar text, with
these options, by the installed lark version; a first process after an install then loads
the parser in about a millisecond. Any other grammar, or another lark version, falls back
to building, with the built tables kept in a file of the same form in the user's cache
directory named by a hash of the grammar, the options and the lark version; a later
process loads them instead of rebuilding. When no cache file can be written the parser is
simply built each time. Every table file holds the SHA-256 of its tables, made when it was
written: a file whose tables do not match it is not loaded (issue 55, item 5), the parser
is built instead.
"""

from __future__ import annotations

import contextlib
import marshal
import os
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import lark

__all__ = ["cache_dir", "lalr_parser", "read_tables", "table_bytes", "table_file", "table_key"]


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
    when they match, else from the user cache's, else built (and its tables kept there)."""
    import lark  # here, not at the top: `cache_dir` alone (explain's cache) needs no parser

    grammar = grammar_file.read_text(encoding="utf-8")
    key = table_key(grammar, options, lark.__version__)
    kept = cache_dir() / f"lark-{key[:24]}.lalr"
    for path in (table_file(grammar_file), kept):
        tables = read_tables(path, key)
        if tables is not None:
            return lark.Lark.load(tables)
    built = lark.Lark(grammar, parser="lalr", **options)
    tmp = kept.with_name(f".{kept.name}.{os.getpid()}.tmp")
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(_table_bytes(built, key))
        os.replace(tmp, kept)  # whole or not at all, whichever process writes it
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return built


def table_bytes(grammar_file: Path, **options: Any) -> bytes:
    """The content of `grammar_file`'s table file, built from the grammar (driver/lark_tables.py)."""
    import lark  # as in `lalr_parser`

    grammar = grammar_file.read_text(encoding="utf-8")
    return _table_bytes(lark.Lark(grammar, parser="lalr", **options), table_key(grammar, options, lark.__version__))


def _table_bytes(parser: lark.Lark, key: str) -> bytes:
    """A table file: the marshal of (lark's version, the key, the SHA-256 of the tables' bytes,
    those bytes: the marshal of lark's serialized parser, {"data": ..., "memo": ...})."""
    import lark  # as in `lalr_parser` (lark's own package loads its grammar and lexer modules)

    data, memo = parser.memo_serialize([lark.lexer.TerminalDef, lark.grammar.Rule])
    tables = marshal.dumps({"data": data, "memo": memo})
    return marshal.dumps((lark.__version__, key, sha256(tables).hexdigest(), tables))


def read_tables(path: Path, key: str) -> dict[str, Any] | None:
    """The serialized parser in the table file `path` when it was made for `key` and its bytes
    match the digest written with them, else None (no such file, another grammar or lark
    version, a damaged file: one flipped byte could make a parser that refuses valid text)."""
    try:
        _version, made_for, digest, tables = marshal.loads(path.read_bytes())
        if made_for != key or type(tables) is not bytes or sha256(tables).hexdigest() != digest:
            return None
        parser = marshal.loads(tables)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return parser if type(parser) is dict else None
