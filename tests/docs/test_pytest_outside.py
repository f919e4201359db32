"""A kernel author's own tests, run with pytest outside this repository, print what
docs/testing.md shows: no warning before the progress line.

A kernel author's environment has npu-opt and pytest; npu-opt registers no pytest plugin,
so their run loads none of ours. This repository's own `test` extra also brings
pytest-asyncio (through pytest-lsp, for tests/lsp), which warns in every project that
leaves `asyncio_default_fixture_loop_scope` unset (pytest 9.2 shows it again whatever
the floor): so the run here disables the plugins the environment's packages register
(`PYTEST_DISABLE_PLUGIN_AUTOLOAD`), as an environment without the test extra has none,
and a second test holds that npu-opt's distribution declares no pytest plugin (issue 58)."""

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
    assert "import npu_opt" not in (tmp_path / "test_one.py").read_text()
    env["PYTHONPATH"] = str(ROOT)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # an author's environment: npu-opt and pytest, no dev extras
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


def test_npu_opt_registers_no_pytest_plugin() -> None:
    """No `pytest11` entry point: installing npu-opt adds nothing to a user's pytest runs."""
    text = (ROOT / "pyproject.toml").read_text()
    assert "pytest11" not in text
    assert tomllib.loads(text)["project"].get("entry-points", {}).get("pytest11") is None
