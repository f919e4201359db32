"""`npu-opt explain` keeps a page's rendered output on disk: a second call with the same
page and sources reads it back (the example is not run again); another page, or a changed
source fingerprint, computes afresh."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from driver import explain, explain_cache


def test_rendered_page_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    calls = []
    render = explain.render_page
    monkeypatch.setattr(explain, "render_page", lambda p: calls.append(p.code) or render(p))
    first, second = io.StringIO(), io.StringIO()
    assert explain.explain_command("DMA-1", first, io.StringIO()) == 0
    assert explain.explain_command("DMA-1", second, io.StringIO()) == 0
    assert calls == ["DMA-1"]
    assert first.getvalue() == second.getvalue() == render(explain.page("DMA-1"))
    assert explain.explain_command("collect-2", io.StringIO(), io.StringIO()) == 0
    assert calls == ["DMA-1", "COLLECT-2"]
    monkeypatch.setattr(explain_cache, "source_fingerprint", lambda: "another build")
    assert explain.explain_command("DMA-1", io.StringIO(), io.StringIO()) == 0
    assert calls == ["DMA-1", "COLLECT-2", "DMA-1"]


def test_fingerprint_follows_the_sources() -> None:
    fp = explain_cache.source_fingerprint()
    assert len(fp) == 64 and fp == explain_cache.source_fingerprint()
