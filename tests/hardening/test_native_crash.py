"""A segmentation fault in a kernel file's code (issue 55, item 6) is reported like any failure
of that file's code, naming the file and line (USAGE, exit 2), by `check`, `compile`, `run`
and `tune`: it killed them with no diagnostic (driver/crash_guard.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hardening.kernels import write

ROOT = Path(__file__).parents[2]
CRASH = "import ctypes\nctypes.string_at(0)"


def _npu_opt(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "npu_opt", *argv], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": ""})


@pytest.mark.parametrize("command, where", [("check", "import"), ("check", "trace"), ("compile", "import"),
                                            ("compile", "trace"), ("run", "import")])
def test_a_crash_in_a_kernel_file_names_the_file(tmp_path, where, command):
    if where == "import":
        write(tmp_path, head=CRASH + "\n")
        line = 2
    else:
        write(tmp_path, body=CRASH.replace("\n", "\n    "))
        line = 11
    extra = {"check": [], "compile": ["-o", "out", "--no-cache", "--jobs", "1"], "run": ["-o", "out"]}[command]
    done = _npu_opt(tmp_path, command, "kern.py::copy_kernel" if command == "run" else "kern.py", *extra)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"error[USAGE]: the code of this file crashed npu-opt's process (SIGSEGV" in done.stderr
    assert f"--> kern.py:{line}" in done.stderr and "Fatal Python error" not in done.stderr


def test_a_crash_in_a_tune_file_names_the_file(tmp_path):
    tune = tmp_path / "tune_crash.py"
    tune.write_text(CRASH + "\n" + (ROOT / "examples" / "tune_gemm.py").read_text())
    done = _npu_opt(tmp_path, "tune", "tune_crash.py", "-o", "out")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "crashed npu-opt's process (SIGSEGV, a segmentation fault)" in done.stderr
    assert "--> tune_crash.py:2" in done.stderr


def test_statuses_pass_through_the_supervisor(tmp_path):
    write(tmp_path, body="import sys\n    sys.exit(3)")
    done = _npu_opt(tmp_path, "check", "kern.py")
    assert done.returncode == 2 and "error[USAGE]" in done.stdout  # as without the supervisor
    write(tmp_path, "ok.py", name="ok_kernel")
    done = _npu_opt(tmp_path, "check", "ok.py")
    assert done.returncode == 0 and "1 ok" in done.stdout
