"""The generated regions of the guide: `python -m driver.guide` writes them into the pages.

Some text of the guide (docs/**/*.md) is made from the code, so that it cannot drift from
it. It is written into the Markdown files themselves, between two HTML comments on lines
of their own, so that a page reads the same on GitHub, in an editor's preview and in the
built site:

    <!-- npu-opt:rules COLLECT TRF -->

    | code | rule | checked at |
    ...

    <!-- /npu-opt:rules -->

The opening comment names the generator and its arguments; `python -m driver.guide`
rewrites everything up to the closing one (a page that has only the opening comment gets
its region and its closing comment). `python -m driver.guide --check` writes nothing and
exits 1 listing the stale pages; tests/docs/test_generated_regions.py fails the same way,
and the MkDocs hook (docs/_hooks/reference.py) refuses to build a stale page.

The generators:

- `cli`: the help of `npu-opt` and of every subcommand, from the real argument parser;
- `diagnostics`: every code of the rule index (`ir.codes.CODES`) with its
  `npu-opt explain` page, example output included;
- `exit-codes`: the exit statuses of every command (`driver.exit_codes`);
- `fixes CODE ...`: for each code, its title, rule and fixes as its `npu-opt explain`
  page gives them (the troubleshooting page);
- `rules FAMILY ...`: a table of the codes of the given families (e.g. `COLLECT TRF`),
  each linked to its entry in the diagnostics index.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs

from driver.cli import build_parser
from driver.exit_codes import markdown_table
from driver.explain import page, render_page
from ir.codes import CODES

__all__ = ["COMMAND", "Region", "cli_markdown", "diagnostics_markdown", "exit_codes_markdown", "fill",
           "fixes_markdown", "main", "regions", "rules_markdown", "stale_pages"]

COMMAND = "python -m driver.guide"
ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

_OPEN = re.compile(r"^<!-- npu-opt:([\w-]+)((?: [\w-]+)*) -->$", re.MULTILINE)
_PHASES = {
    "trace": "trace time (every backend)",
    "lower": "lowering (npu backend)",
    "verify": "op verifier",
    "mapping": "mapping text",
    "cli": "command line",
    "internal": "internal error",
}


@attrs.frozen
class Region:
    """One generated region of a page: the generator, its arguments, and where its text
    lies (`start`, `end`: offsets in the page's text; `closed` is False for an opening
    comment without its closing one, a region never filled)."""

    kind: str
    args: tuple[str, ...]
    start: int
    end: int
    closed: bool

    @property
    def close(self) -> str:
        return f"<!-- /npu-opt:{self.kind} -->"


def regions(text: str) -> list[Region]:
    """The generated regions of a page's text, in order."""
    found = []
    for match in _OPEN.finditer(text):
        kind, args = match.group(1), tuple(match.group(2).split())
        start = match.end() + 1
        close = f"\n<!-- /npu-opt:{kind} -->"
        end = text.find(close, match.end())
        following = _OPEN.search(text, match.end())
        if end == -1 or (following is not None and following.start() < end):
            found.append(Region(kind, args, start, start, closed=False))
        else:
            found.append(Region(kind, args, start, end + 1, closed=True))
    return found


@contextmanager
def _columns(n: int = 88) -> Iterator[None]:
    """argparse wraps help to the terminal width; fix it so the text is stable."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(n)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse has no public accessor for subcommands
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_markdown() -> str:
    """One section per command with the parser's own help text."""
    with _columns():
        parser = build_parser()
        parts = ["## `npu-opt`", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, sub in _subparsers(parser).items():
            parts += [f"## `npu-opt {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def _family(code: str) -> str:
    return "MAP" if code.startswith("MAP-") else re.sub(r"-\d+$", "", code)


def rules_markdown(families: list[str], prefix: str) -> str:
    """A table of every code of `families`, linked to the diagnostics index."""
    rows = ["| code | rule | checked at |", "| --- | --- | --- |"]
    for info in CODES.values():
        if _family(info.code) in families or info.code in families:
            link = f"[`{info.code}`]({prefix}#{info.code})"
            rows.append(f"| {link} | {info.title} | {_PHASES.get(info.phase, info.phase)} |")
    if len(rows) == 2:
        raise ValueError(f"no diagnostic code in families {families}")
    return "\n".join(rows)


def fixes_markdown(codes: list[str], prefix: str) -> str:
    """Each code's title, rule and fixes, from its `npu-opt explain` page, linked to the whole page."""
    parts = []
    for code in codes:
        p = page(code)
        if p is None:
            raise ValueError(f"no explain page for {code}")
        parts += [f"### {code}: {p.title}", "", p.rule, "", "Fix:", ""]
        parts += [f"- {fix}" for fix in p.fixes]
        parts += ["", f"The whole page, with an example: [`npu-opt explain {code}`]({prefix}#{code}).", ""]
    return "\n".join(parts).rstrip("\n")


def diagnostics_markdown() -> str:
    """The index table, then each code's `npu-opt explain` page under an anchor named by
    the code (a raw `<a id>`: GitHub and MkDocs both honour it, and links say `#COLLECT-2`)."""
    parts = ["| code | rule | checked at |", "| --- | --- | --- |"]
    for info in CODES.values():
        parts.append(f"| [`{info.code}`](#{info.code}) | {info.title} | "
                     f"{_PHASES.get(info.phase, info.phase)} |")
    parts.append("")
    for info in CODES.values():
        p = page(info.code)
        parts += [f'<a id="{info.code}"></a>', "", f"### {info.code}: {info.title}", ""]
        if p is None:
            parts += ["(no page)", ""]
            continue
        parts += ["```text", render_page(p).rstrip(), "```", ""]
    return "\n".join(parts).rstrip("\n")


def exit_codes_markdown() -> str:
    return markdown_table()


def generate(kind: str, args: tuple[str, ...], src_uri: str) -> str:
    """The text of one region of the page `src_uri` (its path under docs/)."""
    prefix = "../" * src_uri.count("/") + "reference/diagnostics.md"
    if kind == "cli":
        return cli_markdown()
    if kind == "diagnostics":
        return diagnostics_markdown()
    if kind == "rules":
        return rules_markdown(list(args), prefix)
    if kind == "exit-codes":
        return exit_codes_markdown()
    if kind == "fixes":
        return fixes_markdown(list(args), prefix)
    raise ValueError(f"{src_uri}: unknown generated region npu-opt:{kind}")


def fill(text: str, src_uri: str) -> str:
    """The page's text with every generated region written afresh."""
    out, at = [], 0
    for region in regions(text):
        out.append(text[at:region.start])
        body = generate(region.kind, region.args, src_uri)
        out.append(f"\n{body}\n\n{region.close}\n")  # blank lines: Markdown ends the body's table there
        at = region.end + len(region.close) + 1 if region.closed else region.start
    out.append(text[at:])
    return "".join(out)


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)


def stale_pages() -> dict[Path, str]:
    """Every page whose generated regions differ from what the code generates now, with its fresh text."""
    stale = {}
    for path in _pages():
        text = path.read_text(encoding="utf-8")
        if not regions(text):
            continue
        fresh = fill(text, path.relative_to(DOCS).as_posix())
        if fresh != text:
            stale[path] = fresh
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Write the generated regions of the guide's pages.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 listing the stale pages")
    args = parser.parse_args(argv)
    stale = stale_pages()
    for path, fresh in stale.items():
        name = path.relative_to(ROOT).as_posix()
        if args.check:
            print(f"stale: {name}")
        else:
            path.write_text(fresh, encoding="utf-8")
            print(f"wrote {name}")
    if args.check and stale:
        print(f"run `{COMMAND}` to refresh them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
