"""Exit statuses the commands agree on (issue 39, items 7 and 9): `compile --jobs 0|-1`
and an empty `-o` are refused as `check` and `tune` refuse them, an `--input` FIFO is
refused instead of read forever, a run-time check of the launch's values (RUNTIME-10)
exits 2 under `run` as under `visa --exec`, and axis sizes stay below 2**48 in
`explain-mapping --axes` and `axes()` as the mapping language's limits say."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from driver.cli import main
from ir.errors import MappingError
from tests.hardening.kernels import write

ROOT = Path(__file__).parents[2]
KV_PAGES = ROOT / "examples" / "runtime" / "kv_pages.py"


def status_of(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse refusing the command line
        return int(e.code)


@pytest.mark.parametrize("jobs", ["0", "-1"])
def test_compile_refuses_a_job_count_below_one(tmp_path, capsys, jobs):
    write(tmp_path)
    assert status_of(["compile", str(tmp_path / "kern.py"), "-o", str(tmp_path / "out"), "--jobs", jobs]) == 2
    assert "--jobs takes a positive count" in capsys.readouterr().err
    assert not (tmp_path / "out" / "copy_kernel.visa").exists()


@pytest.mark.parametrize("command", ["compile", "run", "visa"])
def test_an_empty_output_directory_is_refused(tmp_path, capsys, monkeypatch, command):
    write(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    np.save(tmp_path / "x.npy", np.zeros((4096, 8), np.int8))
    if command == "visa":
        assert main(["compile", str(tmp_path / "kern.py"), "-o", str(tmp_path / "out"), "--jobs", "1"]) == 0
        argv = ["visa", str(tmp_path / "out" / "copy_kernel.visa"), "--exec", "--input", f"x={tmp_path / 'x.npy'}"]
    elif command == "run":
        argv = ["run", f"{tmp_path / 'kern.py'}::copy_kernel", "--input", f"x={tmp_path / 'x.npy'}"]
    else:
        argv = ["compile", str(tmp_path / "kern.py")]
    capsys.readouterr()
    assert status_of([*argv, "-o", ""]) == 2
    got = capsys.readouterr()
    assert "-o takes a directory" in got.out + got.err
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("command", ["run", "visa"])
def test_an_input_fifo_is_refused_not_read_forever(tmp_path, command):
    write(tmp_path)
    fifo = tmp_path / "x.npy"
    os.mkfifo(fifo)
    if command == "visa":
        assert main(["compile", str(tmp_path / "kern.py"), "-o", str(tmp_path / "out"), "--jobs", "1"]) == 0
        argv = ["visa", str(tmp_path / "out" / "copy_kernel.visa"), "--exec"]
    else:
        argv = ["run", f"{tmp_path / 'kern.py'}::copy_kernel"]
    done = subprocess.run([sys.executable, "-m", "npu_opt", *argv, "--input", f"x={fifo}", "-o",
                           str(tmp_path / "res")], capture_output=True, text=True, timeout=120,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "is not a regular file" in done.stderr, done.stderr


def test_a_runtime_10_input_exits_2_under_run_and_visa_exec(tmp_path, capsys):
    np.save(tmp_path / "cache.npy", np.zeros((8, 64, 8), np.int32))
    np.save(tmp_path / "src.npy", np.array(0, np.uint32))
    np.save(tmp_path / "dst.npy", np.array(9, np.int32))  # the cache has 8 pages
    inputs = [f"--input={n}={tmp_path / f'{n}.npy'}" for n in ("cache", "src", "dst")]
    assert main(["compile", str(KV_PAGES), "-o", str(tmp_path / "out"), "--jobs", "1"]) == 0
    capsys.readouterr()
    got = {}
    for command in (["run", f"{KV_PAGES}::kv_page_bump"], ["run", f"{KV_PAGES}::kv_page_bump", "--backend", "visa"],
                    ["visa", str(tmp_path / "out" / "kv_page_bump.visa"), "--exec"]):
        status = main([*command, *inputs, "-o", str(tmp_path / "res")])
        got[" ".join(command[:1] + command[2:])] = (status, "error[RUNTIME-10]" in capsys.readouterr().err)
    assert set(got.values()) == {(2, True)}, got


def test_explain_mapping_refuses_an_axis_of_2_to_the_48(capsys):
    assert status_of(["explain-mapping", "A", "--axes", f"A={10 ** 20}"]) == 2
    assert "below 2**48" in capsys.readouterr().err
    assert status_of(["explain-mapping", "A", "--axes", f"A={2 ** 48 - 1}"]) == 0


def test_axes_refuses_a_size_of_2_to_the_48():
    with pytest.raises(MappingError) as e:
        __import__("npu_opt").axes(B=10 ** 30)
    assert e.value.code == "MAP-limit" and "below 2**48" in str(e.value)
