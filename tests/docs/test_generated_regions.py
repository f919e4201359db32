"""The guide's generated regions (driver/guide.py) are written into the pages and current:
a page reads the same as Markdown (GitHub, an editor's preview) and in the built site."""

from __future__ import annotations

import importlib.util
import types

import pytest

from driver import guide
from tests.docs.blocks import DOCS, ROOT, pages


def test_every_generated_region_is_current() -> None:
    stale = [p.relative_to(ROOT).as_posix() for p in guide.stale_pages()]
    assert stale == [], f"stale generated regions in {stale}: run `{guide.COMMAND}`"


def test_every_region_is_closed_and_filled() -> None:
    """No page shows a bare marker: each opening comment has its text and its closing one."""
    found = {}
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for region in guide.regions(text):
            assert region.closed, f"{page.relative_to(ROOT)}: npu-opt:{region.kind} has no closing comment"
            assert text[region.start:region.end].strip(), f"{page.relative_to(ROOT)}: empty npu-opt:{region.kind}"
            found.setdefault(region.kind, []).append(page.relative_to(DOCS).as_posix())
    assert set(found) == {"cli", "diagnostics", "exit-codes", "fixes", "rules"}
    assert "ci.md" in found["exit-codes"] and "troubleshooting.md" in found["fixes"]
    assert "machine/collect.md" in found["rules"] and found["diagnostics"] == ["reference/diagnostics.md"]


def test_the_pages_hold_the_text_a_plain_reader_needs() -> None:
    """The pages issue 58 found empty on GitHub hold their content in the Markdown itself."""
    troubleshooting = (DOCS / "troubleshooting.md").read_text()
    assert "### COLLECT-2: collect packet is not one flit" in troubleshooting
    assert "| 141 |" in troubleshooting
    cli = (DOCS / "reference" / "cli.md").read_text()
    assert "## `npu-opt explain-mapping`" in cli and "usage: npu-opt compile" in cli
    diagnostics = (DOCS / "reference" / "diagnostics.md").read_text()
    assert '<a id="COLLECT-2"></a>' in diagnostics and "error[COLLECT-2]" in diagnostics
    assert "| 2 | a bad invocation" in (DOCS / "ci.md").read_text()
    collect = (DOCS / "machine" / "collect.md").read_text()
    assert "| [`COLLECT-2`](../reference/diagnostics.md#COLLECT-2) |" in collect


def test_fill_writes_a_new_region_and_rewrites_a_stale_one() -> None:
    fresh = guide.exit_codes_markdown()
    new = "# T\n\n<!-- npu-opt:exit-codes -->\n\nafter\n"
    filled = guide.fill(new, "t.md")
    assert filled == f"# T\n\n<!-- npu-opt:exit-codes -->\n\n{fresh}\n\n<!-- /npu-opt:exit-codes -->\n\nafter\n"
    stale = filled.replace("| 141 |", "| 142 |")
    assert stale != filled and guide.fill(stale, "t.md") == filled
    assert guide.fill(filled, "t.md") == filled
    two = "<!-- npu-opt:rules COLLECT -->\n<!-- npu-opt:rules TRIM -->\n"
    twice = guide.fill(two, "machine/x.md")
    assert [r.args for r in guide.regions(twice)] == [("COLLECT",), ("TRIM",)]
    assert all(r.closed for r in guide.regions(twice)) and guide.fill(twice, "machine/x.md") == twice
    with pytest.raises(ValueError, match="unknown generated region npu-opt:nope"):
        guide.fill("<!-- npu-opt:nope -->\n", "t.md")


def test_check_mode_names_the_command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(guide, "stale_pages", lambda: {DOCS / "ci.md": "changed"})
    assert guide.main(["--check"]) == 1
    out = capsys.readouterr()
    assert "stale: docs/ci.md" in out.out and "python -m driver.guide" in out.err


def _hook() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("reference_hook", DOCS / "_hooks" / "reference.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def test_the_mkdocs_hook_refuses_a_stale_page_and_passes_a_current_one() -> None:
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="ci.md"))
    text = (DOCS / "ci.md").read_text()
    assert _hook().on_page_markdown(text, page, None, None) == text
    with pytest.raises(ValueError, match=r"docs/ci.md: a generated region is stale; run `python -m driver.guide`"):
        _hook().on_page_markdown(text.replace("| 141 |", "| 142 |"), page, None, None)
