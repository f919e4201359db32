"""`--format github` cannot be made to issue workflow commands (issue 28, item 9): a file
name or a message that holds `\\r`, `\\n`, `::`, `,` or `%` is escaped the way GitHub
Actions reads annotation properties and data, so every annotation is one line that
starts with `::error` and carries exactly the file it is about."""

from __future__ import annotations

import re

import pytest

from ir.diagnostic import Diagnostic
from driver.cli import main
from tests.hardening.kernels import write

EVIL = "a,line=9::b\r\n::warning file=x.py::injected %0A"


def _unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return _unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def test_properties_and_data_are_escaped():
    line = Diagnostic(code="USAGE", message=EVIL, file=f"dir/{EVIL}.py", line=3, col=2).github()
    assert "\r" not in line and "\n" not in line
    match = re.fullmatch(r"::error file=([^,:]*),line=3,col=2::(.*)", line)
    assert match, line
    assert _unescape_property(match.group(1)) == f"dir/{EVIL}.py"
    assert _unescape_data(match.group(2)) == f"[USAGE] {EVIL}"


@pytest.mark.parametrize("command", ["check", "compile"])
def test_a_file_name_and_a_message_cannot_inject_commands(tmp_path, capsys, command):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a,line=9::b\n::warning file=x.py::injected.py").write_text("x = (\n")
    write(src, "raises.py", body=f"raise ValueError({EVIL!r})")
    write(src, "renamed.py", name="renamed_kernel", head="def rename(f):\n    f.__name__ = 'k\\n::warning::named'\n"
          "    return f\n", replace=("@device(chip=1)\n", "@device(chip=1)\n@rename\n"))
    extra = ["-o", str(tmp_path / "out")] if command == "compile" else []
    assert main([command, str(src), "--format", "github", *extra]) == 2
    out = capsys.readouterr().out
    assert "\r" not in out
    commands = [line for line in out.split("\n") if line.startswith("::")]
    assert len(commands) == 3 and all(line.startswith("::error file=") for line in commands), out
    assert not any(line.startswith("::warning") for line in out.split("\n"))
