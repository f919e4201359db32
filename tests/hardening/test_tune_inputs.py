"""`npu-opt tune` takes bad input as `check` does (issue 39, items 5, 7, 8, 9 and 11): a
path that is no tune file, a bad seed or `--top`, a space whose `inputs()` or `oracle()`
fails or returns the wrong thing: a USAGE diagnostic naming the user's line, exit 2, never
a traceback. Code in a space cannot decide the exit status (`sys.exit`, `os._exit`), a
choice written as a string is refused instead of split into characters, and a space too
large to run is refused before anything compiles."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from driver.cli import main
from tests.hardening.kernels import COPY

ROOT = Path(__file__).parents[2]

HEAD, KERNEL = COPY.replace("{name}", "copy_kernel").replace("    {body}\n", "").split("@device", 1)
SPACE = ("import numpy as np\nfrom npu_opt.tune import Space\n" + HEAD +
         '\ndef make(pick="a"):\n    # FACTORY\n' + textwrap.indent("@device" + KERNEL, "    ") +
         """    return copy_kernel


def inputs(rng):
    # INPUTS
    return (rng.integers(-128, 128, (4096, 8), dtype=np.int8),)


def oracle(x):
    # ORACLE
    return x.astype(np.int32).T.copy()


SPACE = Space(make, {"pick": ["a", "b"]}, inputs=inputs, oracle=oracle)
""")


def line_of(text: str) -> int:
    """The line of the tune file that holds `text` (the first one)."""
    return next(n for n, line in enumerate(SPACE.splitlines(), 1) if text in line)


def space_file(directory: Path, name: str = "space.py", *, at: str | None = None, code: str = "",
               replace: tuple[str, str] | None = None) -> Path:
    """The tune file above; `code` put at the marker `at` (FACTORY, INPUTS, ORACLE)."""
    text = SPACE
    if at is not None:
        text = text.replace(f"# {at}", code)
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    path = directory / name
    path.write_text(text)
    return path


def tune(capsys, *argv: str) -> tuple[int, str]:
    try:
        status = main(["tune", *argv])
    except SystemExit as e:  # argparse refusing the command line
        status = int(e.code)
    got = capsys.readouterr()
    return status, got.out + got.err


def test_the_space_tunes(tmp_path, capsys):
    status, text = tune(capsys, str(space_file(tmp_path)), "-o", str(tmp_path / "o"))
    assert status == 0, text
    assert "winner: #0" in text


@pytest.mark.parametrize("which", [".", "/", "", "loop", "missing", "fifo", "dir"])
def test_a_path_that_is_no_tune_file(tmp_path, capsys, monkeypatch, which):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "f.py")
    path = {".": ".", "/": "/", "": "", "loop": "loop1", "missing": "nope.py", "fifo": "f.py", "dir": "d"}[which]
    status, text = tune(capsys, path, "-o", str(tmp_path / "o"))
    assert status == 2 and "error[USAGE]" in text and "Traceback" not in text, text


def test_a_fifo_does_not_hang_tune(tmp_path):
    fifo = tmp_path / "space.py"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "npu_opt", "tune", str(fifo), "-o", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60, env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr


@pytest.mark.parametrize("flag, value, says", [("--seed", "-1", "--seed"), ("--top", "0", "--top"),
                                               ("--top", "-2", "--top"), ("--jobs", "0", "--jobs"),
                                               ("-o", "", "-o")])
def test_bad_options_are_refused_before_the_search(tmp_path, capsys, monkeypatch, flag, value, says):
    monkeypatch.chdir(tmp_path)
    space = space_file(tmp_path, at="FACTORY", code="raise RuntimeError('the search must not start')")
    status, text = tune(capsys, str(space), flag, value)
    assert status == 2 and says in text and "Traceback" not in text, text
    assert "the search must not start" not in text
    assert not (tmp_path / "tune.txt").exists()


@pytest.mark.parametrize("at, code, says, line", [
    ("INPUTS", "raise ValueError('no inputs today')", "inputs() raised ValueError: no inputs today", "# INPUTS"),
    ("ORACLE", "raise ValueError('no oracle today')", "oracle() raised ValueError: no oracle today", "# ORACLE"),
    ("INPUTS", "return rng.integers(-128, 128, (4096, 8), dtype=np.int8)", "returned ndarray", "def inputs"),
    ("INPUTS", "return (np.zeros((4096, 8), np.int8),) * 2", "returned 2 array(s); kernel `copy_kernel` takes 1",
     "def inputs"),
    ("ORACLE", "import sys; sys.exit(0)", "oracle() called SystemExit(0)", "# ORACLE"),
    ("INPUTS", "import os; os._exit(3)", "inputs() called os._exit(3)", "# INPUTS"),
])
def test_a_failing_inputs_or_oracle_is_the_users_error(tmp_path, capsys, at, code, says, line):
    path = space_file(tmp_path, at=at, code=code)
    status, text = tune(capsys, str(path), "-o", str(tmp_path / "o"))
    assert status == 2, text
    assert "error[USAGE]" in text and says in text and "Traceback" not in text, text
    assert f"{path}:{line_of(line)}" in text


@pytest.mark.parametrize("code", ["import sys; sys.exit(0)", "import os; os._exit(0)", "raise KeyboardInterrupt"])
def test_a_factory_that_exits_is_that_candidates_error(tmp_path, capsys, code):
    status, text = tune(capsys, str(space_file(tmp_path, at="FACTORY", code=code)), "-o", str(tmp_path / "o"))
    assert status == 1, text  # no candidate compiled: the report says why, npu-opt decides the status
    assert "may not exit npu-opt" in (tmp_path / "o" / "tune.json").read_text()


def test_an_exiting_factory_under_worker_processes(tmp_path):
    path = space_file(tmp_path, at="FACTORY", code="import os; os._exit(0)")
    done = subprocess.run([sys.executable, "-m", "npu_opt", "tune", str(path), "-o", str(tmp_path / "o"), "--jobs",
                           "2"], capture_output=True, text=True, timeout=300,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr


def test_a_choice_written_as_a_string_is_refused(tmp_path, capsys):
    path = space_file(tmp_path, replace=('{"pick": ["a", "b"]}', '{"pick": "ab"}'))
    status, text = tune(capsys, str(path), "-o", str(tmp_path / "o"))
    assert status == 2 and "error[USAGE]" in text, text
    assert "['ab']" in text and f"{path}:{line_of('SPACE = Space(')}" in text


def test_a_huge_space_is_refused_before_compiling(tmp_path, capsys):
    path = space_file(tmp_path, replace=('{"pick": ["a", "b"]}', '{"pick": list(range(600)), "q": list(range(500))}'))
    path.write_text(path.read_text().replace('def make(pick="a"):', 'def make(pick=0, q=0):'))
    status, text = tune(capsys, str(path), "-o", str(tmp_path / "o"), "--format", "json")
    assert status == 2 and "300000 candidates" in text and "--max-candidates" in text, text
