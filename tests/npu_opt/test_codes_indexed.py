"""Every code the compiler can raise, and every code the guide names, is in the rule index
(`ir.codes.CODES`), so `npu-opt explain` has a page for it (test_explain.py holds the
index and the pages in step).

The raise sites are found by reading the source, not by running it: any string literal
in the shipped packages spelled like a rule code (`VE-SLOT-3`, `W-FETCH-1`, `MAP-syntax`)
is a code some path can raise (as `Violation(code, ...)`, `refuse(code, ...)`,
`@rule(code)`, an error's `code=`, or a table of rule texts), and an f-string that builds
one (`f"DMA-{n}"`) must name an indexed family. The guide is read the same way: every
code named in docs/ or README.md must be indexed.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from ir.codes import CODES
from tests import source_tree

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("npu_opt", "driver", "ir", "tu_ops", "visa", "backends")
CODE = re.compile(r"(?:W-)?[A-Z][A-Z0-9]*(?:-[A-Z][A-Z0-9]*)*-\d+[a-z]?|MAP-[a-z_]+")
# Words of the guide spelled like codes that are not codes.
NOT_CODES = frozenset({"SHA-256", "UTF-8", "IEEE-754", "RFC-8259"})
FAMILIES = {c.rsplit("-", 1)[0] for c in CODES}


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in source_tree.paths(pkg))


def _literal_codes(path: Path) -> list[tuple[str, int]]:
    tree = source_tree.tree(path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.fullmatch(node.value):
            found.append((node.value, node.lineno))
        elif isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if (isinstance(head, ast.Constant) and isinstance(head.value, str) and len(node.values) > 1
                    and re.fullmatch(r"(?:W-)?[A-Z][A-Z0-9]*(?:-[A-Z][A-Z0-9]*)*-", head.value)):
                found.append((head.value + "{}", node.lineno))
    return found


@functools.cache
def raised_codes() -> dict[str, list[str]]:
    """Each code-shaped literal of the shipped packages with the places it stands (scanned
    once per process: the three tests below read it)."""
    sites: dict[str, list[str]] = {}
    for path in _sources():
        for code, line in _literal_codes(path):
            sites.setdefault(code, []).append(f"{path.relative_to(ROOT)}:{line}")
    return sites


def test_the_scan_finds_the_raise_sites_it_must():
    """The scanner sees the three ways codes are raised (a `Violation`, a `refuse`, a rule table),
    and an f-string family, or it could pass by seeing nothing."""
    sites = raised_codes()
    for code in ("PAIR-VRF-1", "VE-SLOT-3", "COLLECT-2", "DMA-4"):
        assert code in sites, code
    assert len(sites) > 300


def test_every_raised_code_is_indexed():
    sites = raised_codes()
    missing = {c: s[:3] for c, s in sites.items() if not c.endswith("{}") and c not in CODES}
    assert missing == {}, f"raised but not in ir.codes.CODES (no explain page): {missing}"


def test_every_built_code_names_an_indexed_family():
    sites = raised_codes()
    missing = {c: s[:3] for c, s in sites.items() if c.endswith("{}") and c[:-3] not in FAMILIES}
    assert missing == {}, f"codes built from an unknown family: {missing}"


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def named_codes() -> dict[str, list[str]]:
    """Each code named in the guide or the README, with its places."""
    pattern = re.compile(r"(?<![A-Za-z0-9_\-/.])(" + CODE.pattern + r")(?![A-Za-z0-9_\-])")
    names: dict[str, list[str]] = {}
    for path in _doc_files():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in pattern.finditer(line):
                names.setdefault(match.group(1), []).append(f"{path.relative_to(ROOT)}:{n}")
    return names


def test_every_code_the_guide_names_is_indexed():
    names = named_codes()
    assert "COLLECT-2" in names  # the README's taste names it: the scan reads the files
    missing = {c: p[:3] for c, p in names.items() if c not in CODES and c not in NOT_CODES}
    assert missing == {}, f"named in docs/ or README.md but unknown to `npu-opt explain`: {missing}"


@pytest.mark.parametrize("source, expected", [
    ('raise refuse("VE-SLOT-9", "x")', {"VE-SLOT-9"}),
    ('Violation(f"DMA-{n}", "x")', {"DMA-{}"}),
    ('x = "not a code"', set()),
])
def test_literal_scan_recognises_code_spellings(tmp_path, source, expected):
    path = tmp_path / "m.py"
    path.write_text(source + "\n")
    assert {c for c, _ in _literal_codes(path)} == expected
