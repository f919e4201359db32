"""`ir.lark_cache.lalr_parser`: the parser tables are written once and loaded by later
builds (another process would load the same file); without a writable cache directory
the parser is still built."""

from __future__ import annotations

from pathlib import Path

import pytest

from ir import lark_cache

GRAMMAR = """
start: NUMBER ("+" NUMBER)*
%import common.NUMBER
%import common.WS
%ignore WS
"""


def test_tables_are_cached_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path / "cache"))
    first = lark_cache.lalr_parser(GRAMMAR)
    files = list((tmp_path / "cache").iterdir())
    assert len(files) == 1 and files[0].stat().st_size > 0
    stamp = files[0].stat().st_mtime_ns
    second = lark_cache.lalr_parser(GRAMMAR)
    assert list((tmp_path / "cache").iterdir()) == files and files[0].stat().st_mtime_ns == stamp
    assert first.parse("1 + 2 + 3") == second.parse("1 + 2 + 3")
    lark_cache.lalr_parser(GRAMMAR + "\n// another grammar\n")
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_unwritable_cache_still_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(blocker / "cache"))
    parser = lark_cache.lalr_parser(GRAMMAR)
    assert len(parser.parse("4 + 5").children) == 2
