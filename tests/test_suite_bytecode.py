"""The suite's own processes keep bytecode even where the caller asked Python for none
(`tests/conftest.py`, `_suite_bytecode`): without it every worker and every Python
subprocess of the suite compiles the checkout's sources again."""

from __future__ import annotations

import os
import subprocess
import sys


def test_this_worker_and_its_subprocesses_may_write_bytecode():
    assert not sys.dont_write_bytecode
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ
    child = subprocess.run([sys.executable, "-S", "-c", "import sys; print(sys.dont_write_bytecode)"],
                           capture_output=True, text=True, timeout=60, check=True)
    assert child.stdout.strip() == "False"
