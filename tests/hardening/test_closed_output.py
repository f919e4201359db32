"""A kernel file that closes npu-opt's standard output or error (issue 55, item 6): `os.close(1)`,
`os.dup2(fd, 1)` or `os.closerange` over it, at import or while traced, is that file's or
kernel's USAGE error and the report still reaches the terminal (it exited 1 with nothing
said); `sys.__stdout__.close()` only flushes, as `sys.stdout.close()` does (issue 39)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hardening.kernels import write

ROOT = Path(__file__).parents[2]
CLOSES = {"os.close(1)": "import os\nos.close(1)", "os.close(2)": "import os\nos.close(2)",
          "os.dup2": "import os\nos.dup2(os.open(os.devnull, os.O_WRONLY), 1)",
          "os.closerange": "import os\nos.closerange(1, 3)"}


def _npu_opt(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "npu_opt", *argv], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("where", ["import", "trace"])
@pytest.mark.parametrize("how", list(CLOSES))
@pytest.mark.parametrize("command", ["check", "compile"])
def test_closing_npu_opts_output_is_a_usage_error(tmp_path, how, where, command):
    code = CLOSES[how]
    if where == "import":
        write(tmp_path, head=code + "\n")
    else:
        write(tmp_path, body=code.replace("\n", "\n    "))
    write(tmp_path, "good.py", name="good_kernel")
    extra = ["-o", "out", "--no-cache"] if command == "compile" else []
    done = _npu_opt(tmp_path, command, "kern.py", "good.py", *extra)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "error[USAGE]" in done.stdout and "where it writes its report" in done.stdout
    assert "good_kernel" in done.stdout and "ICE" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_closing_sys_dunder_stdout_only_flushes(tmp_path):
    write(tmp_path, body="import sys\n    print('from the kernel')\n    sys.__stdout__.close()")
    done = _npu_opt(tmp_path, "check", "kern.py")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "from the kernel" in done.stdout and "checked 1 kernel(s): 1 ok" in done.stdout
