"""Every runnable code block of the guide runs, and every console block shows the real
output of its command (rules of the block kinds: tests/docs/blocks.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from driver import guide
from tests.docs.blocks import RUN_KINDS, ROOT, PageRunner, blocks, pages
from tests.optional_deps import need

# Pages whose blocks import an optional framework (the torch and jax extras, which .ci/run
# installs): skipped without it, a failure under CI=true (tests/optional_deps.py).
NEEDS = {"frameworks.md": (("torch", "torch"), ("jax", "jax"))}

# Blocks deliberately not run: furiosa-opt surface npu-opt does not offer yet, shown as
# the planned Python form. Changing this number is a deliberate act.
PLANNED_BLOCKS = 0


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for module, extra in NEEDS.get(page.name, ()):
        need(module, extra)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ROOT))
    runner = PageRunner(page, tmp_path)
    try:
        for block in blocks(page):
            if block.kind in RUN_KINDS:
                runner.run(block)
    finally:
        runner.close()
    shown = [b for b in blocks(page) if b.kind in RUN_KINDS]
    assert sum(runner.counts.values()) == len(shown)


def test_planned_blocks_are_counted() -> None:
    planned = [b for p in pages() for b in blocks(p) if b.kind == "python" and b.marker == "planned"]
    assert len(planned) == PLANNED_BLOCKS, [b.where for b in planned]


def test_no_unknown_block_kinds() -> None:
    """A typo in a fence (```pyhton) would silently skip a block; refuse unknown kinds."""
    known = set(RUN_KINDS) | {"sh", "text", "rust", "toml", "json", "lua", ""}  # lua: Neovim set-up (editor.md)
    unknown = [(b.where, b.kind) for p in pages() for b in blocks(p) if b.kind not in known]
    assert not unknown
    assert any(b.kind == "" for p in pages() for b in blocks(p)) is False, "every fence names its language"


def test_the_guide_has_runnable_blocks() -> None:
    kinds = [b.kind for p in pages() for b in blocks(p)]
    assert kinds.count("python") >= 25 and kinds.count("console") >= 12 and kinds.count("pycon") >= 6


def _generated_lines(page: Path) -> set[int]:
    """The line numbers of the page's generated regions (driver/guide.py): their text is the
    code's own (an `npu-opt explain` page quoting a command line) and is kept current by
    tests/docs/test_generated_regions.py."""
    text = page.read_text(encoding="utf-8")
    return {line for r in guide.regions(text)
            for line in range(text.count("\n", 0, r.start) + 1, text.count("\n", 0, r.end) + 2)}


def test_transcripts_are_console_blocks() -> None:
    """A `$ npu-opt ...` transcript in a block that is only shown (```text, ```sh) is never
    compared with the real output and drifts; such transcripts must be ```console blocks."""
    shown_only = [b.where for p, generated in ((p, _generated_lines(p)) for p in pages()) for b in blocks(p)
                  if b.kind not in RUN_KINDS and b.line not in generated
                  and any(line.lstrip().startswith("$ npu-opt") for line in b.body.splitlines())]
    assert shown_only == []
