"""The guide's "not yet" statements and the known differences from furiosa-opt stay in step
with the code: every such statement links an item of docs/changes.md's known-differences
list, every item names the test that pins today's behaviour (which exists), and each item
pinned here is checked against the compiler."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from driver import guide


ROOT = Path(__file__).resolve().parents[2]
CHANGES = ROOT / "docs" / "changes.md"
# A statement that the guide lacks something: these phrasings, case-insensitive.
GAP = re.compile(r"\bnot (done |offered |supported |implemented |lowered |placed |in npu-opt )?yet\b|"
                 r"does not (have|offer|place|support) yet|\bplanned\b|\bfor now\b", re.IGNORECASE)
ITEM = re.compile(r'<a id="(kd-[a-z0-9-]+)"></a>\*\*(kd-[a-z0-9-]+)\*\*(.*?)(?=\n- <a id=|\n\n|\Z)', re.DOTALL)
PIN = re.compile(r"Pinned by\s+`([^`:]+)::(\w+)`")


def _items() -> dict[str, str]:
    text = CHANGES.read_text(encoding="utf-8")
    section = text[text.index("## Known differences"):]
    section = section[:section.index("\n## ", 5)] if "\n## " in section[5:] else section
    items = {}
    for match in ITEM.finditer(section):
        assert match.group(1) == match.group(2), match.group(0)[:80]
        items[match.group(1)] = match.group(3)
    return items


def _paragraphs(path: Path) -> list[tuple[int, str]]:
    """The page's paragraphs and their first lines; a generated region (driver/guide.py) is
    the code's own text, an `npu-opt explain` page or a rule title, and is left out."""
    text = path.read_text(encoding="utf-8")
    for region in reversed(guide.regions(text)):
        text = text[:region.start] + "\n" * text.count("\n", region.start, region.end) + text[region.end:]
    out, line = [], 1
    for block in re.split(r"\n\s*\n", text):
        out.append((line, block))
        line += block.count("\n") + 2
    return out


def test_the_list_has_items_and_each_names_an_existing_test():
    items = _items()
    assert len(items) >= 5
    for kd, body in items.items():
        pins = PIN.findall(body)
        assert pins, f"{kd} names no pinning test"
        for file, name in pins:
            tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
            names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
            assert name in names, f"{kd}: {file} has no test {name}"


def test_every_gap_statement_links_a_known_difference():
    items = _items()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    loose = []
    for page in pages:
        for line, paragraph in _paragraphs(page):
            if page == CHANGES and "kd-" in paragraph:
                continue
            if GAP.search(paragraph):
                linked = re.findall(r"changes\.md#(kd-[a-z0-9-]+)", paragraph)
                if not linked or any(k not in items for k in linked):
                    loose.append(f"{page.relative_to(ROOT)}:{line}: {GAP.search(paragraph).group(0)!r}")
    assert loose == []


def test_every_item_is_linked_or_listed_once():
    text = CHANGES.read_text(encoding="utf-8")
    for kd in _items():
        assert text.count(f'<a id="{kd}">') == 1


@pytest.mark.parametrize("text, gap", [("is not in npu-opt yet.", True), ("not lowered yet (VIEW-10)", True),
                                       ("the shape planned for it", True), ("a move not copied yet", False),
                                       ("it runs now", False)])
def test_gap_phrasings(text, gap):
    assert bool(GAP.search(text)) is gap

