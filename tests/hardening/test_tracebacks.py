"""Tracebacks turned into errors (issue 16, "Tracebacks to turn into errors")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from driver.cli import main
from tests.hardening.kernels import write

ROOT = Path(__file__).parents[2]
RNGD = (ROOT / "tu_ops" / "targets" / "rngd.toml").read_text()
NPU_OPT = [sys.executable, "-m", "npu_opt"]


def test_explain_mapping_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["explain-mapping", "--help"])
    assert info.value.code == 0
    assert '"A / 8 # 256, A % 8"' in capsys.readouterr().out


@pytest.mark.parametrize("flag", ["-o", "--dump-ir"])
@pytest.mark.parametrize("where", ["file", "file/sub", "/proc/x"])
def test_an_unwritable_output_directory_is_refused_before_compiling(tmp_path, capsys, flag, where):
    (tmp_path / "file").write_text("")
    place = where if where.startswith("/") else str(tmp_path / where)
    args = ["compile", str(write(tmp_path)), "--no-cache", flag, place]
    if flag != "-o":
        args += ["-o", str(tmp_path / "out")]
    assert main(args) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"error[USAGE]: {flag} {place}:") and "copy_kernel" not in out


def test_a_closed_pipe_is_not_a_traceback():
    reader = subprocess.Popen([*NPU_OPT, "check", str(ROOT / "examples"), str(ROOT / "tests" / "fixtures")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader.stdout.readline()
    reader.stdout.close()  # what `| head -1` does
    _, err = reader.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()


def test_sigint_during_a_parallel_compile_is_one_line_and_exit_130(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    for name in ("a_kernel", "b_kernel"):
        body = f"import time, pathlib; pathlib.Path({str(marks / name)!r}).touch(); time.sleep(60)"
        write(tmp_path, f"{name}.py", name=name, body=body)
    out = tmp_path / "out"
    run = subprocess.Popen([*NPU_OPT, "compile", str(tmp_path), "-o", str(out), "--jobs", "2", "--no-cache"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130
    assert err.decode().strip() == "npu-opt: interrupted"
    assert not out.exists() or not [p for p in out.iterdir() if p.name != ".npu-opt-cache"]


def test_a_forged_npy_header_is_refused_before_allocating(tmp_path, capsys):
    path = write(tmp_path)
    forged = tmp_path / "forged.npy"
    header = {"descr": "|i1", "fortran_order": False, "shape": (2 ** 40, 128)}
    with open(forged, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        f.write(b"\0" * 64)
    status = main(["run", f"{path}::copy_kernel", "--input", f"x={forged}", "-o", str(tmp_path / "o")])
    assert status == 2
    assert "declares shape (1099511627776, 128)" in capsys.readouterr().err


@pytest.mark.parametrize("old, new, key", [("FLIT_BYTES = 32", "FLIT_BYTES = 7", "FLIT_BYTES"),
                                           ("COMMIT_WIDTHS = [8, 16, 24, 32]", "COMMIT_WIDTHS = [5]", "COMMIT_WIDTHS"),
                                           ("LANES = [1, 2, 4, 8]", "LANES = [1000000]", "LANES")])
def test_a_target_file_describing_no_possible_chip_is_refused(tmp_path, capsys, old, new, key):
    assert old in RNGD
    target = tmp_path / "t.toml"
    target.write_text(RNGD.replace(old, new))
    assert main(["targets", str(target)]) == 2
    captured = capsys.readouterr()
    assert f"constants.{key}" in captured.out + captured.err
    assert main(["compile", str(write(tmp_path)), "--target", str(target), "-o", str(tmp_path / "o")]) == 2
    assert f"constants.{key}" in capsys.readouterr().out
