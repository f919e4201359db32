"""Where a diagnostic's code links to: a page that opens without building the guide.

With the setting `guideUrl` (a served guide), the link is that guide's diagnostics
reference (`GUIDE/reference/diagnostics/#CODE`). Without it, the link is a file: the
code's `npu-opt explain` page (its text without the example's output, which would run
the compiler), written once per server into the user cache directory
(`ir.lark_cache.cache_dir()/lsp-pages/CODE.txt`) and rewritten whenever its text differs
(a stale or damaged copy is replaced). It opens in any editor, in a checkout or an
installed package alike; the guide's `site/` exists only after `mkdocs build`.
"""

from __future__ import annotations

import contextlib
import functools
import re

from driver.explain import page, render_page
from driver.replay import write_atomic
from ir.lark_cache import cache_dir

__all__ = ["code_link", "explain_url"]

_SAFE = re.compile(r"[A-Za-z0-9_-]+")


def explain_url(base: str, code: str) -> str:
    """The served guide's page of `code` (docs/reference/diagnostics.md)."""
    return f"{base.rstrip('/')}/reference/diagnostics/#{code}"


def code_link(code: str, guide: str | None) -> str | None:
    """The link of a diagnostic's code: the served guide's, else its explain page's file
    (None when the code has no page or the page cannot be written)."""
    return explain_url(guide, code) if guide else _page_file(code)


@functools.lru_cache(maxsize=None)
def _page_file(code: str) -> str | None:
    found = page(code) if _SAFE.fullmatch(code) else None
    if found is None:
        return None
    text = render_page(found, with_example_output=False)
    path = cache_dir() / "lsp-pages" / f"{found.code}.txt"
    with contextlib.suppress(OSError):
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
        return path.as_uri()
    return None
