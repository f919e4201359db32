"""Mapping texts' syntax trees kept across processes (ir/mapping/syntax.py, the `mappings`
bundle): a process whose texts were parsed before starts without lark and builds the same
mappings with the same error columns; a text lark refuses is never kept."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ir import kept_bundle
from ir.errors import MappingError
from ir.mapping import syntax
from ir.mapping.parser import MISSING as syntax_missing, parse_index_items, parse_mapping

ROOT = Path(__file__).resolve().parents[2]
AXES = {"A": 64, "B": 8, "K": 512}
TEXTS = ["A / 8 # 256, A % 8", "[A / 2, B]", "K # {0} 1024 % 32", "(A, B) / {n} % (K / 2)"]
# Texts whose build fails, with the category and column the parser gave before trees were kept.
REFUSED = {"(B, K % 16) # 32": ("padding_too_small", 15), "K / {n} # 4": ("padding_too_small", 11),
           "A / 8, Q": ("unknown_axis", 8), "A # 2 / 3 % 9 = 4": ("padding_too_small", 5),
           "A / {m}": ("escape_type", 5)}


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An empty cache directory, and a way to forget what this process parsed (a new process)."""
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))

    def new_process() -> None:
        kept_bundle.flush()
        monkeypatch.setattr(kept_bundle, "_BUNDLES", {})
        syntax.syntax_tree.cache_clear()

    new_process()
    yield new_process
    syntax.syntax_tree.cache_clear()


def _built(text: str) -> object:
    try:
        return str(parse_mapping(text, AXES, lambda name: {"n": 2, "m": "A"}.get(name, syntax_missing)))
    except MappingError as e:
        return (e.category, e.column)


def test_kept_trees_build_what_lark_trees_build(fresh, tmp_path: Path) -> None:
    texts = TEXTS + list(REFUSED)
    first = [_built(t) for t in texts]
    assert first[len(TEXTS):] == list(REFUSED.values())
    fresh()
    (path,) = tmp_path.glob("mappings-*")
    assert len(marshal.loads(marshal.loads(path.read_bytes())[-1])) == len(texts)

    def no_lark(*args: object) -> None:
        raise AssertionError("a kept text was parsed again")

    syntax._parser.cache_clear()
    real = syntax._parsed
    syntax._parsed = no_lark
    try:
        again = [_built(t) for t in texts]
    finally:
        syntax._parsed = real
    assert again == first
    assert first[:len(TEXTS)] == ["(A / 8 # 256, A % 8)", "(A / 2, B)", "K #{0} 1024 % 32", "(A, B) / 2 % 256"]


def test_index_and_axes_texts_are_kept_apart_from_mappings(fresh) -> None:
    assert [(str(m), v) for m, v in parse_index_items("A / 8: 3, B: 1", AXES)] == [("A / 8", 3), ("B", 1)]
    fresh()
    assert [(str(m), v) for m, v in parse_index_items("A / 8: 3, B: 1", AXES)] == [("A / 8", 3), ("B", 1)]
    assert str(parse_mapping("A / 8", AXES)) == "A / 8"


def test_a_refused_text_is_not_kept(fresh, tmp_path: Path) -> None:
    for _ in range(2):
        with pytest.raises(MappingError) as e:
            parse_mapping("A / , B", AXES)
        assert e.value.category == "syntax" and e.value.column == 5
        fresh()
    assert list(tmp_path.glob("mappings-*")) == []


def test_a_warm_process_does_not_import_lark(tmp_path: Path) -> None:
    script = ("import sys\nfrom ir.mapping.parser import parse_mapping\n"
              f"print(parse_mapping({TEXTS[0]!r}, {AXES!r}), 'lark' in sys.modules)\n")
    env = os.environ | {"NPU_OPT_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
            for _ in range(2)]
    assert [r.stdout.split()[-1] for r in runs] == ["True", "False"]
    assert runs[0].stdout.split()[:-1] == runs[1].stdout.split()[:-1]
