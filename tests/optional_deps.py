"""Tests that need an optional framework (torch, jax): CI installs both (.ci/run), so there a
missing framework is a failure; elsewhere its tests are skipped with the install command."""

from __future__ import annotations

import importlib.util
import os

import pytest


def need(module: str, extra: str) -> None:
    """Skip (fail under CI=true) unless `module` can be imported."""
    if importlib.util.find_spec(module) is not None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{module} is not installed but CI is set: .ci/run installs npu-opt[{extra}]")
    pytest.skip(f"{module} not installed (pip install -e '.[{extra}]')")
