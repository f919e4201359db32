"""`ir.lark_cache.lalr_parser`: a grammar's shipped tables are loaded when they were made for
its text, options and lark version, and ignored otherwise; without them the parser tables
are written once to the user's cache and loaded by later builds (another process would load
the same file); without a writable cache directory the parser is still built."""

from __future__ import annotations

import marshal
from pathlib import Path

import lark
import pytest

from ir import lark_cache
from ir.lark_cache import table_bytes

GRAMMAR = """
start: NUMBER ("+" NUMBER)*
%import common.NUMBER
%import common.WS
%ignore WS
"""


def _grammar(tmp_path: Path, text: str = GRAMMAR) -> Path:
    path = tmp_path / "sum.lark"
    path.write_text(text, encoding="utf-8")
    return path


def _no_building(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("built a parser from its grammar")

    monkeypatch.setattr(lark.Lark, "__init__", refuse)


def test_tables_are_cached_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path / "cache"))
    grammar = _grammar(tmp_path)
    first = lark_cache.lalr_parser(grammar)
    files = list((tmp_path / "cache").iterdir())
    assert len(files) == 1 and files[0].stat().st_size > 0
    stamp = files[0].stat().st_mtime_ns
    second = lark_cache.lalr_parser(grammar)
    assert list((tmp_path / "cache").iterdir()) == files and files[0].stat().st_mtime_ns == stamp
    assert first.parse("1 + 2 + 3") == second.parse("1 + 2 + 3")
    lark_cache.lalr_parser(_grammar(tmp_path, GRAMMAR + "\n// another grammar\n"))
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_unwritable_cache_still_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(blocker / "cache"))
    parser = lark_cache.lalr_parser(_grammar(tmp_path))
    assert len(parser.parse("4 + 5").children) == 2


def test_matching_shipped_tables_are_loaded_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path / "cache"))
    grammar = _grammar(tmp_path)
    lark_cache.table_file(grammar).write_bytes(table_bytes(grammar, propagate_positions=True))
    _no_building(monkeypatch)
    parser = lark_cache.lalr_parser(grammar, propagate_positions=True)
    tree = parser.parse("1 +  22")
    assert [str(t) for t in tree.children] == ["1", "22"] and tree.children[1].column == 6
    assert tree.meta.end_column == 8  # the option came with the tables
    assert not (tmp_path / "cache").exists()  # nothing built, nothing cached


@pytest.mark.parametrize("change", ["grammar", "options", "lark version", "damaged file"])
def test_shipped_tables_made_for_something_else_are_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          change: str) -> None:
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path / "cache"))
    grammar = _grammar(tmp_path)
    table = lark_cache.table_file(grammar)
    table.write_bytes(table_bytes(grammar))
    options = {"propagate_positions": True} if change == "options" else {}
    if change == "grammar":  # the tables of `1 + 2`, the grammar now with `-` as well
        grammar.write_text(GRAMMAR.replace('"+"', '("+" | "-")'), encoding="utf-8")
    elif change == "lark version":
        version, _key, digest, tables = marshal.loads(table.read_bytes())
        other = lark_cache.table_key(grammar.read_text(encoding="utf-8"), {}, version + ".post9")
        table.write_bytes(marshal.dumps((version + ".post9", other, digest, tables)))
    elif change == "damaged file":
        table.write_bytes(table.read_bytes()[:100])
    parser = lark_cache.lalr_parser(grammar, **options)
    assert len(list((tmp_path / "cache").iterdir())) == 1  # built, and its tables cached
    assert len(parser.parse("1 + 2").children) == 2
    if change == "grammar":
        assert len(parser.parse("1 - 2").children) == 2
