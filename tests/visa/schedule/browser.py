"""The browser of the schedule page's tests: Playwright for Python (the `test` extra) driving
the system's chromium (Debian's `chromium` package), never a browser Playwright downloads.

`browser_or_skip()` is the CI rule: without chromium or Playwright the test skips on a
developer's machine and fails under CI (CI=true), where .ci/run installs both.
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from typing import Iterator

from tests.optional_deps import missing

__all__ = ["chromium_path", "browser_or_skip"]

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def chromium_path() -> str | None:
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


def sync_playwright():
    """Playwright's entry point, or None without the test extra; imported when a browser is
    asked for, so collecting the page's tests does not load Playwright in every worker."""
    try:
        from playwright.sync_api import sync_playwright as start
    except ImportError:
        return None
    return start


def _missing(what: str) -> None:
    missing(what, "CI installs it: .ci/run's apt-get install chromium, the test extra's playwright")


@contextmanager
def browser_or_skip() -> Iterator[object]:
    """A headless chromium driven by Playwright (its `Browser`), closed on exit."""
    path = chromium_path()
    if path is None:
        _missing("no chromium on PATH")
    start = sync_playwright()
    if start is None:
        _missing("Playwright for Python is not installed (pip install -e '.[test]')")
    with start() as playwright:
        browser = playwright.chromium.launch(executable_path=path)
        try:
            yield browser
        finally:
            browser.close()
