"""Tests that need something optional (torch, jax, mkdocs, chromium, Playwright): CI installs
all of it (.ci/run), so there a missing piece is a failure; elsewhere the test is skipped
with the way to install it."""

from __future__ import annotations

import importlib.util
import os

import pytest


def missing(what: str, install: str) -> None:
    """`what` is not here: fail under CI (CI=true, 1 or yes), else skip; `install` says how."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what} but CI is set: {install}")
    pytest.skip(f"{what} ({install})")


def need(module: str, extra: str) -> None:
    """Skip (fail under CI) unless `module` can be imported; the `extra` installs it."""
    if importlib.util.find_spec(module) is None:
        missing(f"{module} is not installed", f"pip install -e '.[{extra}]', as .ci/run does")
