"""Discovery (issue 16, "Wrong answers" 8 and the newcomer's list): an empty run fails and
says what was searched; virtual environments, build and hidden directories and
`__main__.py` are skipped; a file named twice is one file; a non-Python file says so."""

from __future__ import annotations

import pytest

from driver.cli import main
from tests.hardening.kernels import write


@pytest.mark.parametrize("command", ["check", "compile"])
@pytest.mark.parametrize("case", ["no kernel", "empty directory", "filter"])
def test_a_run_that_finds_no_kernel_fails_and_says_what_was_searched(tmp_path, capsys, command, case):
    src = tmp_path / "src"
    src.mkdir()
    extra = []
    if case == "no kernel":
        (src / "plain.py").write_text("x = 1\n")
        want = "no @device kernel in the 1 Python file(s) found in"
    elif case == "filter":
        write(src)
        extra = ["--filter", "nothing*"]
        want = "--filter 'nothing*' matches none of the 1 kernel(s) found in"
    else:
        want = "no Python file found in"
    if command == "compile":
        extra += ["-o", str(tmp_path / "out")]
    assert main([command, str(src), *extra]) == 2
    out = capsys.readouterr().out
    assert want in out and str(src) in out


def test_virtual_environments_build_hidden_and_main_are_skipped(tmp_path, capsys):
    write(tmp_path, name="kept_kernel")
    for skipped in ["venv", ".venv", "build", ".hidden", "myenv", "lib/site-packages"]:
        (tmp_path / skipped).mkdir(parents=True)
        (tmp_path / skipped / "bad.py").write_text("raise RuntimeError('must not be imported')\n")
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "__main__.py").write_text("raise RuntimeError('must not be imported')\n")
    assert main(["check", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "checked 1 kernel(s): 1 ok" in out and "RuntimeError" not in out


def test_the_same_file_twice_is_one_file(tmp_path, capsys):
    path = write(tmp_path)
    assert main(["check", str(path), str(path), str(tmp_path)]) == 0
    assert "checked 1 kernel(s): 1 ok\n" in capsys.readouterr().out


def test_a_non_python_file_is_not_a_syntax_error(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("# A title\n\nsome text\n")
    assert main(["check", str(readme)]) == 2
    out = capsys.readouterr().out
    assert "not a Python file" in out and "syntax" not in out
