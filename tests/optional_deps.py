"""Tests that need something optional (torch, jax, mkdocs, chromium, Playwright): CI installs
all of it (.ci/run), so there a missing piece is a failure; elsewhere the test is skipped
with the way to install it."""

from __future__ import annotations

import importlib
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


class Deferred:
    """A module imported at its first attribute read, not when the test module is collected:
    every xdist worker collects every test module, and torch (~2.6 CPU-s) and jax (~1.1) at
    a test module's top were imported by each worker, while only the worker that runs those
    tests needs them. `torch = Deferred("torch")` reads as the module does (`torch.int8`)."""

    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            # pytest's collection asks every module attribute for `__test__` and `__bases__`:
            # answered by the module, those reads imported it in every worker after all
            raise AttributeError(name)
        return getattr(importlib.import_module(self._module), name)

    def __repr__(self) -> str:
        return f"<deferred module {self._module}>"
