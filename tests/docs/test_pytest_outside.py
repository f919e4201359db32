"""A kernel author's own tests, run with pytest outside this repository, print what
docs/testing.md shows: no warning before the progress line.

The `test` extra brings pytest-asyncio (through pytest-lsp, for tests/lsp), a plugin every
pytest run of the environment loads. It warns when `asyncio_default_fixture_loop_scope`
is unset, which only this repository's pyproject.toml sets; pytest before 8.4 forced
warnings raised while plugins configure to show, so an author's first run began with a
PytestDeprecationWarning (issue 58). The extra asks for pytest 8.4 or later."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.docs.blocks import ROOT


def test_a_project_without_configuration_runs_without_a_warning(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHONWARNINGS", "CI"))}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Warning" not in out and "warning" not in out, out
    assert re.fullmatch(r"\. +\[100%\]\n1 passed in [\d.]+s\n", out), out


def test_the_test_extra_asks_for_a_pytest_that_keeps_plugin_configuration_warnings_quiet() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pytest_req = next(r for r in extras["test"] if re.match(r"pytest\b(?!-)", r))
    floor = tuple(int(x) for x in re.search(r">=([\d.]+)", pytest_req).group(1).split("."))
    assert floor >= (8, 4), pytest_req
