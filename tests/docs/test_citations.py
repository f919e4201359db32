"""The repository stands alone: no text in it cites a file it does not contain.

Docstrings, comments, help texts and explain pages once pointed at the design notes the
project was written from (api.md, pipeline.md, ...), which are not part of the
repository. They now point at a guide page (docs/...) or name a rule ID. This test
greps every tracked text file for such citations, and checks that every `docs/...md`
page a file cites exists.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_OUTSIDE_NOTES = ("api", "pipeline", "mapping", "dtypes", "examples", "artifacts", "surface", "style")
# a bare `NAME.md` (not `docs/NAME.md` and not part of a longer file name such as mapping-language.md)
OUTSIDE = re.compile(r"(?<![\w/.-])(?:" + "|".join(_OUTSIDE_NOTES) + r")\.md\b"
                     r"|\.\./shared/|shared/spec/|/work/shared")
DOCS_PAGE = re.compile(r"(?<![\w/.-])docs/([\w/-]+\.md)")
TEXT_SUFFIXES = {".py", ".toml", ".lark", ".md", ".yml", ".yaml", ".txt", ".cfg", ".ini", ".json", ".visa", ""}
SELF = Path(__file__).resolve()
TOOL = SELF.parent / "cite_map.py"  # the rewriting tool names the old files by necessity
# Lines that must keep their citation for now, each with the reason (none at present).
ALLOWED: set[str] = set()


def tracked_files() -> list[Path]:
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"git ls-files failed: {proc.stderr}"
    files = [ROOT / name for name in proc.stdout.split("\0") if name]
    assert len(files) > 100
    return [f for f in files if f.suffix in TEXT_SUFFIXES and f.is_file() and f.resolve() not in (SELF, TOOL)]


def _lines(pattern: re.Pattern) -> list[tuple[str, str]]:
    found = []
    for path in tracked_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for match in pattern.finditer(line):
                found.append((f"{path.relative_to(ROOT)}:{number}", match.group(0)))
    return found


def test_no_citation_of_files_outside_the_repository() -> None:
    hits = [(where, what) for where, what in _lines(OUTSIDE) if where not in ALLOWED]
    assert not hits, ("these lines cite files the repository does not contain; point at a docs/ page "
                      "or a rule ID instead (python -m tests.docs.cite_map rewrites them):\n" + "\n".join(f"  {where}: {what}" for where, what in hits[:50]))


def test_cited_docs_pages_exist() -> None:
    missing = [(where, what) for where, what in _lines(DOCS_PAGE) if not (ROOT / what).is_file()]
    assert not missing, "cited guide pages that do not exist:\n" + "\n".join(f"  {w}: {p}" for w, p in missing)


def test_the_pattern_catches_the_old_forms() -> None:
    for text in ("see pipeline.md 9.4", "(api.md section 2)", "dtypes.md", "../shared/spec/mapping.md",
                 "mapping.md 10.3 predicate PKT-FLIT"):
        assert OUTSIDE.search(text), text
    for text in ("docs/mapping-language.md", "docs/numerics.md", "README.md", "rule COLLECT-2"):
        assert not OUTSIDE.search(text), text


def test_the_rewriting_tool_maps_sections_to_pages() -> None:
    from tests.docs.cite_map import rewrite

    cases = {
        "(pipeline.md 9.4)": "(docs/machine/contraction.md)",
        "(pipeline.md 9.5)": "(docs/numerics.md)",
        "see dtypes.md section 4.1.": "see docs/numerics.md.",
        "(api.md 2, mapping.md 10.3)": "(docs/getting-started.md, docs/machine/index.md)",
        "examples.md example 3": "examples/gemm.py",
        "pipeline.md LOWER-1": "rule LOWER-1",
        "../shared/spec/artifacts.md section 3": "docs/ci.md",
    }
    for old, new in cases.items():
        assert rewrite(old) == new, (old, rewrite(old))
        assert not OUTSIDE.search(rewrite(old))
        cited = DOCS_PAGE.findall(rewrite(old))
        assert all((ROOT / "docs" / page).is_file() for page in cited), cited
