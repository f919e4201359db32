"""Rewrite citations of the design notes the project was written from (api.md, pipeline.md,
mapping.md, dtypes.md, examples.md, artifacts.md, surface.md, style.md), which are not in
the repository, into the guide page or in-repo file covering the same subject.

Run `python -m tests.docs.cite_map` from the repository root to rewrite every tracked
file in place (tests/docs/test_citations.py then passes); review the diff. This module
necessarily names the old files, so the citation test skips it.
"""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CITE = re.compile(
    r"(?<![\w/-])(?:\.\./)*(?:shared/spec/)?(?P<file>api|pipeline|mapping|dtypes|examples|artifacts|surface|style)\.md"
    r"(?P<poss>'s)?"
    r"(?:(?P<sep>,?[ ]+(?:sections?[ ]+|§[ ]*|examples?[ ]+)?|[ ]*§[ ]*)(?P<sec>\d+(?:\.\d+|b)?)(?:[ ]*[-–][ ]*\d+(?:\.\d+)?)?(?:,[ ]*\d+(?:\.\d+)?(?:[ ]*[-–][ ]*\d+(?:\.\d+)?)?(?![\w.]))*(?![\w.]*\.md))?")
RULE = re.compile(r"(?<![\w/-])(?:\.\./)*(?:shared/spec/)?pipeline\.md[ ]+(?:rule[ ]+)?(?=[A-Z][A-Z-]*-\d)")

M = 'docs/machine/'
PIPE = {'0': M + 'index.md', '1': M + 'index.md', '2': M + 'index.md', '2.1': M + 'index.md', '2.2': M + 'index.md',
        '2.3': M + 'index.md', '2.4': M + 'index.md', '3': 'docs/porting.md', '4': M + 'dma.md', '5': M + 'fetch.md',
        '6': M + 'fetch.md', '7': M + 'fetch-adapter.md', '8': M + 'collect.md', '8.2': M + 'collect.md',
        '9': M + 'contraction.md', '9.5': 'docs/numerics.md', '10': M + 'commit.md', '10.1': M + 'cast.md',
        '10.2': M + 'commit.md', '10.3': M + 'commit-adapter.md', '10.4': M + 'commit.md',
        '11': 'docs/reference/diagnostics.md', '12': 'docs/ci.md', '13': M + 'index.md', '14': M + 'index.md',
        '15': 'docs/reference/diagnostics.md'}
API = {'1': 'README.md', '2': 'docs/getting-started.md', '3': 'docs/testing.md', '4': 'docs/reference/cli.md',
       '5': 'docs/reference/diagnostics.md', '6': 'docs/reference/cli.md'}
ART = {'1': 'visa/visa.lark', '2': 'docs/ci.md', '3': 'docs/ci.md', '4': 'tu_ops/targets/rngd.toml',
       '5': 'docs/reference/python-api.md', '6': 'docs/testing.md'}
EX = {'0': 'docs/testing.md', '1': 'examples/dot_product.py', '2': 'examples/gemv.py', '3': 'examples/gemm.py',
      '4': 'examples/gemm_i8.py', '4b': 'examples/gemm_bf16.py', '5': 'examples/row_sum.py',
      '6': 'examples/widening_copy.py', '7': 'docs/reference/diagnostics.md', '8': 'docs/ci.md'}
DEFAULT = {'api': 'docs/reference/python-api.md', 'pipeline': M + 'index.md', 'mapping': 'docs/mapping-language.md',
           'dtypes': 'docs/numerics.md', 'examples': 'examples/', 'artifacts': 'docs/ci.md',
           'surface': 'docs/porting.md', 'style': 'README.md'}


def target(file, sec):
    if sec is None:
        return DEFAULT[file]
    major = sec.split('.')[0].rstrip('b')
    table = {'pipeline': PIPE, 'api': API, 'artifacts': ART, 'examples': EX}.get(file)
    if file == 'mapping':
        return M + 'index.md' if major == '10' else 'docs/mapping-language.md'
    if table is None:
        return DEFAULT[file]
    return table.get(sec) or table.get(major) or DEFAULT[file]


def sub(match):
    t = target(match.group('file'), match.group('sec'))
    return t + (match.group('poss') or '')


def rewrite(text: str) -> str:
    """`text` with every citation replaced."""
    return CITE.sub(sub, RULE.sub("rule ", text))


# Files whose bytes are pinned (hashed into every artifact) or that must name the notes.
SKIP_PREFIXES = ("tests/vectors/", "docs/", "tests/docs/")
SKIP_FILES = {"README.md", "tu_ops/targets/rngd.toml"}


def main() -> int:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    changed = 0
    for name in files:
        path = ROOT / name
        if name.startswith(SKIP_PREFIXES) or name in SKIP_FILES or path.suffix not in (".py", ".toml", ".lark", ".md"):
            continue
        text = path.read_text()
        new = rewrite(text)
        if new != text:
            path.write_text(new)
            changed += 1
    print(f"rewrote citations in {changed} file(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
