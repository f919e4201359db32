"""tests/golden: a listing equal to its file passes, a name that appears or disappears fails
with a diff naming it, and update mode rewrites the file instead."""

from __future__ import annotations

import pytest

from tests import golden


def test_compare_and_update(tmp_path, monkeypatch):
    monkeypatch.setattr(golden, "HERE", tmp_path)
    (tmp_path / "toy.txt").write_text("a\nb\n", encoding="utf-8")
    golden.assert_golden("toy", ["a", "b"])
    with pytest.raises(AssertionError, match=r"(?s)toy.txt differs.*\n\+c\n"):
        golden.assert_golden("toy", ["a", "b", "c"])
    with pytest.raises(AssertionError, match=r"(?s)\n-b\n"):
        golden.assert_golden("toy", ["a"])
    monkeypatch.setitem(golden.UPDATE, "on", True)
    golden.assert_golden("toy", ["a", "c"])
    assert (tmp_path / "toy.txt").read_text(encoding="utf-8") == "a\nc\n"
