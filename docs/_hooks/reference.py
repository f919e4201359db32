"""MkDocs hook: the guide's generated regions are checked, never made, at build time.

The text made from the code (the command-line help, the diagnostics index, the exit
statuses, the tables of rule codes) is written into the pages themselves by
`python -m driver.guide` (driver/guide.py), so a page reads the same on GitHub and in
the built site. This hook refuses to build a page whose regions differ from what the code
generates now, naming the command that refreshes them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from driver.guide import COMMAND, cli_markdown, fill, regions  # noqa: E402 - after the path set-up

__all__ = ["cli_markdown", "on_page_markdown"]


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs hook signature
    if regions(markdown) and fill(markdown, page.file.src_uri) != markdown:
        raise ValueError(f"docs/{page.file.src_uri}: a generated region is stale; run `{COMMAND}`")
    return markdown
