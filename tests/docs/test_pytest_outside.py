"""A kernel author's own tests, run with pytest outside this repository, print what
docs/testing.md shows: no warning before the progress line.

A kernel author's environment has npu-opt and pytest; npu-opt registers no pytest plugin,
so their run loads none of ours, and the `test` extra brings no plugin that warns about
configuration it does not find (pytest-asyncio, which pytest-lsp brought, warned in every
project that left its loop-scope option unset: tests/lsp now drive the server with their
own synchronous client, issue 58 item 4). The run here disables the plugins the
environment's packages register (`PYTEST_DISABLE_PLUGIN_AUTOLOAD`), as an author's
environment may hold other packages than ours; the other tests hold that npu-opt declares
no pytest plugin and that the `test` extra asks for no asyncio plugin.
"""

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


def test_the_test_extra_brings_no_asyncio_plugin_and_pytest_sets_no_option_of_one() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    test_extra = project["project"]["optional-dependencies"]["test"]
    names = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in test_extra}
    assert not names & {"pytest-asyncio", "pytest-lsp"}, names  # pytest-lsp brings pytest-asyncio
    assert not [k for k in project["tool"]["pytest"]["ini_options"] if k.startswith("asyncio")]
    mark = "pytest.mark." + "asyncio"  # (not spelled whole here: this file is one of those read)
    assert not [t for t in (ROOT / "tests").rglob("*.py") if mark in t.read_text()]


def test_npu_opt_registers_no_pytest_plugin() -> None:
    """No `pytest11` entry point: installing npu-opt adds nothing to a user's pytest runs."""
    text = (ROOT / "pyproject.toml").read_text()
    assert "pytest11" not in text
    assert tomllib.loads(text)["project"].get("entry-points", {}).get("pytest11") is None
