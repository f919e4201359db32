"""Articles in messages: "an bf16 stream", "pass a int32 array" (issue 58). A template never
writes `a` or `an` itself before an interpolated name or number; it calls `ir.words.a_an`,
which chooses by how the value is read aloud."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import source_tree

from ir.words import a_an, article

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("npu_opt", "synth", "driver", "ir", "tu_ops", "visa", "backends")


def _hard_articles(path: Path) -> list[str]:
    """`file:line` of every f-string with a literal "a " or "an " just before a `{...}` (a
    capital "A " is left alone: `schedule --compare` labels its two schedules A and B)."""
    tree = source_tree.tree(path)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        for before, after in zip(node.values, node.values[1:]):
            if isinstance(before, ast.Constant) and isinstance(after, ast.FormattedValue) and \
                    isinstance(before.value, str) and before.value.split(" ")[-2:-1] in (["a"], ["an"], ["An"]) \
                    and before.value.endswith(" "):
                found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{node.lineno}")
    return found


def test_no_template_writes_its_own_article_before_a_value() -> None:
    found = [hit for pkg in PACKAGES for path in source_tree.paths(pkg) for hit in _hard_articles(path)]
    assert found == [], "use ir.words.a_an(...) for the article before an interpolated value:\n" + "\n".join(found)


def test_the_scan_finds_a_hard_article(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('d = "bf16"\nx = f"on an {d} stream"\ny = f"one {d}"\nz = f"{a_an(d)} stream"\n')
    assert _hard_articles(probe) == ["probe.py:2"]


@pytest.mark.parametrize("word, expected", [
    ("i8", "an i8"), ("i32", "an i32"), ("u8", "a u8"), ("bf16", "a bf16"), ("f32", "an f32"),
    ("f8e4m3", "an f8e4m3"), ("i5", "an i5"), ("int", "an int"), ("int32", "an int32"), ("uint8", "a uint8"),
    ("float", "a float"), ("str", "a str"), ("usize", "a usize"), ("HbmTensor", "an HbmTensor"),
    ("DmTensor", "a DmTensor"), ("TrfTensor", "a TrfTensor"), ("SpmTensor", "an SpmTensor"), ("hbm", "an hbm"),
    ("dm", "a dm"), ("HBM", "an HBM"), ("VRF", "a VRF"), ("ndarray", "an ndarray"), ("NoneType", "a NoneType"),
    ("main", "a main"), (8, "an 8"), (11, "an 11"), (16, "a 16"), (18, "an 18"), (80, "an 80"), (1024, "a 1024"),
    ("8-byte", "an 8-byte"), ("Mapping", "a Mapping"), ("OpVerifyError", "an OpVerifyError"),
])
def test_the_article_follows_how_the_word_is_read(word: object, expected: str) -> None:
    assert a_an(word) == expected


def test_a_sentence_may_start_with_it() -> None:
    assert a_an("i8", start=True) == "An i8" and article("bf16") == "a"
