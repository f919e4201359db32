"""Whatever the user's code raises or does, the report and the exit status are npu-opt's
(issue 28, item 12): an exception whose `__str__` raises or returns a non-string, a
`BaseException` subclass (also through `--jobs 2`, where an exception that cannot be
pickled would break the pool) and `os._exit(n)` are USAGE errors of the file or kernel
that did it, exit 2, never a traceback, an ICE or the user's exit status."""

from __future__ import annotations

import subprocess
import sys

import pytest

from driver.cli import main
from tests.hardening.kernels import write

CLASSES = '''
class StrRaises(Exception):
    def __str__(self):
        raise RuntimeError("no text")


class StrNotText(Exception):
    def __str__(self):
        return 5


class Base(BaseException):
    def __init__(self, a, b):  # cannot be rebuilt from its args: pickling it fails
        super().__init__(a)

'''
RAISES = {"__str__ raises": "raise StrRaises()", "__str__ returns 5": "raise StrNotText()",
          "BaseException subclass": "raise Base(1, 2)"}


def _files(tmp_path, where: str, what: str):
    src = tmp_path / "src"
    src.mkdir()
    if where == "import":
        (src / "odd_exceptions_helper.py").write_text(CLASSES)
        write(src, head=f"from odd_exceptions_helper import *\n{what}\n")
    else:
        write(src, head=CLASSES, body=what)
    write(src, "good.py", name="good_kernel")
    return src


@pytest.mark.parametrize("where", ["import", "trace"])
@pytest.mark.parametrize("case", list(RAISES))
@pytest.mark.parametrize("command, jobs", [("check", "1"), ("compile", "1"), ("compile", "2")])
def test_an_odd_exception_is_a_usage_error(tmp_path, capsys, case, where, jobs, command):
    src = _files(tmp_path, where, RAISES[case])
    extra = ["-o", str(tmp_path / "out"), "--jobs", jobs, "--no-cache"] if command == "compile" else []
    status = main([command, str(src), *extra])
    out = capsys.readouterr()
    assert status == 2, out
    assert "error[USAGE]" in out.out and "ICE" not in out.out and "Traceback" not in out.out + out.err
    name = {"__str__ raises": "StrRaises", "__str__ returns 5": "StrNotText", "BaseException subclass": "Base"}
    assert name[case] in out.out
    if command == "compile":
        assert (tmp_path / "out" / "good_kernel.visa").is_file()


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("where", ["import", "trace"])
def test_os_exit_in_user_code_does_not_decide_the_exit_status(tmp_path, where, jobs):
    src = _files(tmp_path, where, "import os; os._exit(0)")
    done = subprocess.run([sys.executable, "-m", "npu_opt", "compile", str(src), "-o", str(tmp_path / "out"),
                           "--jobs", jobs], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "os._exit(0)" in done.stdout and "error[USAGE]" in done.stdout and "ICE" not in done.stdout
    assert (tmp_path / "out" / "good_kernel.visa").is_file()


@pytest.mark.parametrize("where", ["body", "import"])
@pytest.mark.parametrize("command", ["check", "compile", "run"])
def test_a_kernel_that_closes_stdout_does_not_break_the_report(tmp_path, command, where):
    """issue 39, item 6: `sys.stdout.close()` in a kernel file (at import or in the body)
    closed the stream npu-opt reports on: a traceback from check, compile and run."""
    import os
    from pathlib import Path

    import numpy as np

    if where == "body":
        write(tmp_path, head="import sys\n", body="sys.stdout.close()")
    else:
        write(tmp_path, head="import sys\nsys.stdout.close()\n")
    np.save(tmp_path / "x.npy", np.zeros((4096, 8), np.int8))
    argv = {"check": ["check", "kern.py"], "compile": ["compile", "kern.py", "-o", "out", "--jobs", "1"],
            "run": ["run", "kern.py::copy_kernel", "--input", "x=x.npy", "-o", "out"]}[command]
    done = subprocess.run([sys.executable, "-m", "npu_opt", *argv], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert {"check": "checked 1 kernel(s): 1 ok", "compile": "compiled 1 kernel(s): 1 ok",
            "run": "wrote out/out.npy"}[command] in done.stdout


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("call", ["os.kill(os.getpid(), signal.SIGTERM)", "signal.raise_signal(signal.SIGTERM)",
                                  "os.killpg(0, signal.SIGTERM)", "os.abort()"])
def test_a_kernel_that_signals_itself_is_the_users_error(tmp_path, jobs, call):
    """issue 39, item 10: under `--jobs 2` a kernel killing its worker with SIGTERM was
    reported as an internal error (exit 3); under `--jobs 1` it killed npu-opt."""
    src = _files(tmp_path, "trace", f"import os, signal; {call}")
    done = subprocess.run([sys.executable, "-m", "npu_opt", "compile", str(src), "-o", str(tmp_path / "out"),
                           "--jobs", jobs], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "sent to its own process" in done.stdout and "ICE" not in done.stdout
    assert (tmp_path / "out" / "good_kernel.visa").is_file()


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("where", ["import", "trace"])
def test_a_users_npuopterror_with_the_ice_code_is_a_usage_error(tmp_path, capsys, where, jobs):
    """issue 39, item 10: `raise NpuOptError(..., code="ICE")` in the user's code exited 3."""
    src = _files(tmp_path, where, "from ir.errors import NpuOptError; raise NpuOptError('mine', code='ICE')")
    assert main(["compile", str(src), "-o", str(tmp_path / "out"), "--jobs", jobs]) == 2
    out = capsys.readouterr().out
    assert "error[USAGE]" in out and "mine" in out and "error[ICE]" not in out
