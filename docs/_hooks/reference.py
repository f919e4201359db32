"""MkDocs hook: the generated parts of the guide, produced from the code at build time.

A page asks for generated text with an HTML comment on a line of its own:

- `<!-- npu-opt:cli -->`: the help of `npu-opt` and of every subcommand, taken from the
  real argument parser (`driver.cli.build_parser`), so the reference cannot drift;
- `<!-- npu-opt:diagnostics -->`: every code of the rule index (`ir.codes.CODES`) with
  its `npu-opt explain` page, example output included;
- `<!-- npu-opt:exit-codes -->`: the exit statuses of every command (`driver.exit_codes`);
- `<!-- npu-opt:fixes CODE ... -->`: for each code, its title, rule and fixes as its
  `npu-opt explain` page gives them (the troubleshooting page);
- `<!-- npu-opt:rules FAMILY ... -->`: a table of the codes of the given families
  (e.g. `COLLECT TRF`), each linked to its entry in the diagnostics index.

tests/docs imports this module to check the same text the site shows.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_MARKER = re.compile(r"^<!-- npu-opt:([\w-]+)((?: [\w-]+)*) -->$", re.MULTILINE)
_PHASES = {
    "trace": "trace time (every backend)",
    "lower": "lowering (npu backend)",
    "verify": "op verifier",
    "mapping": "mapping text",
    "cli": "command line",
    "internal": "internal error",
}


@contextmanager
def _columns(n: int = 88):
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
    from driver.cli import build_parser

    with _columns():
        parser = build_parser()
        parts = ["## `npu-opt`", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, sub in _subparsers(parser).items():
            parts += [f"## `npu-opt {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def _anchor(code: str) -> str:
    return code


def rules_markdown(families: list[str], prefix: str) -> str:
    """A table of every code of `families`, linked to the diagnostics index."""
    from ir.codes import CODES

    rows = ["| code | rule | checked at |", "| --- | --- | --- |"]
    for info in CODES.values():
        family = "MAP" if info.code.startswith("MAP-") else re.sub(r"-\d+$", "", info.code)
        if family in families or info.code in families:
            link = f"[`{info.code}`]({prefix}#{_anchor(info.code)})"
            rows.append(f"| {link} | {info.title} | {_PHASES.get(info.phase, info.phase)} |")
    if len(rows) == 2:
        raise ValueError(f"no diagnostic code in families {families}")
    return "\n".join(rows)


def fixes_markdown(codes: list[str], prefix: str) -> str:
    """Each code's title, rule and fixes, from its `npu-opt explain` page, linked to the whole page."""
    from driver.explain import page

    parts = []
    for code in codes:
        p = page(code)
        if p is None:
            raise ValueError(f"no explain page for {code}")
        parts += [f"### {code}: {p.title}", "", p.rule, "", "Fix:", ""]
        parts += [f"- {fix}" for fix in p.fixes]
        parts += ["", f"The whole page, with an example: [`npu-opt explain {code}`]({prefix}#{_anchor(code)}).", ""]
    return "\n".join(parts)


def diagnostics_markdown() -> str:
    """The index table, then each code's `npu-opt explain` page."""
    from ir.codes import CODES
    from driver.explain import page, render_page

    parts = ["| code | rule | checked at |", "| --- | --- | --- |"]
    for info in CODES.values():
        parts.append(f"| [`{info.code}`](#{_anchor(info.code)}) | {info.title} | "
                     f"{_PHASES.get(info.phase, info.phase)} |")
    parts.append("")
    for info in CODES.values():
        p = page(info.code)
        parts += [f"### {info.code}: {info.title} {{#{_anchor(info.code)}}}", ""]
        if p is None:
            parts += ["(no page)", ""]
            continue
        parts += ["```text", render_page(p).rstrip(), "```", ""]
    return "\n".join(parts)


def expand(markdown: str, src_uri: str = "index.md") -> str:
    """Replace every generator marker of the page `src_uri` (path under docs/) by its text."""
    prefix = "../" * src_uri.count("/") + "reference/diagnostics.md"
    def one(match: re.Match) -> str:
        kind, args = match.group(1), match.group(2).split()
        if kind == "cli":
            return cli_markdown()
        if kind == "diagnostics":
            return diagnostics_markdown()
        if kind == "rules":
            return rules_markdown(args, prefix)
        if kind == "exit-codes":
            from driver.exit_codes import markdown_table

            return markdown_table()
        if kind == "fixes":
            return fixes_markdown(args, prefix)
        raise ValueError(f"unknown generator marker npu-opt:{kind}")
    return _MARKER.sub(one, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs hook signature
    return expand(markdown, page.file.src_uri)
