"""`npu-opt check`: discovery, status lines, formats and exit codes (docs/reference/cli.md)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from driver.cli import main
from tests.npu_opt.test_compile_cli import EXAMPLE_KERNELS

ROOT = Path(__file__).parents[2]

GOOD = '''
from npu_opt import *

axes(A=8, B=64)

@device(chip=1)
def {name}(ctx: Context, x: HbmTensor[i8, m("1"), m("A, B")]) -> HbmTensor[i8, m("1"), m("A, B")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1 # 2"), m("1 # 256"), m("A, B")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A"), m("B"))
         .collect(m("A, B / 32"), m("{packet}"))
         .commit_trim(m("B % 32"))
         .commit())
    return y.to_hbm(ctx.tdma)
'''


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_examples_all_pass(capsys):
    assert main(["check", str(ROOT / "examples")]) == 0
    out = capsys.readouterr().out
    n = len(EXAMPLE_KERNELS)
    assert out.count("\nok ") + out.startswith("ok ") == n
    assert f"checked {n} kernel(s): {n} ok" in out


def test_refusal_exit_1_with_rule_file_line(tmp_path, capsys):
    path = write(tmp_path, "typo.py", GOOD.format(name="typo_kernel", packet="B % 3Z"))
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "error[MAP-syntax]" in out and "typo.py:11:" in out
    lines = out.splitlines()
    source = next(i for i, line in enumerate(lines) if line.startswith("11 |"))
    caret_line = lines[source + 1]
    assert lines[source][caret_line.index("^")] == "Z"  # the caret sits under the typo


def test_syntax_error_file_is_exit_2_and_others_still_checked(tmp_path, capsys):
    write(tmp_path, "a_broken.py", "def oops(:\n    pass\n")
    write(tmp_path, "b_good.py", GOOD.format(name="good_kernel", packet="B % 32"))
    assert main(["check", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "Python syntax error" in out and "a_broken.py:1" in out
    assert "ok       good_kernel" in out
    assert "Traceback" not in out


def test_module_level_mapping_error_is_exit_2_naming_the_code(tmp_path, capsys):
    write(tmp_path, "bad_module.py", 'from npu_opt import *\naxes(A=8)\nS = m("A / 3")\n')
    assert main(["check", str(tmp_path / "bad_module.py")]) == 2
    out = capsys.readouterr().out
    assert "MAP-stride_not_divisible" in out and "bad_module.py:3" in out


def test_bad_path_is_exit_2(capsys):
    assert main(["check", "/no/such/dir"]) == 2
    assert "no such file" in capsys.readouterr().out


def test_duplicate_kernel_names_are_a_usage_error(tmp_path, capsys):
    write(tmp_path, "one.py", GOOD.format(name="same", packet="B % 32"))
    write(tmp_path, "two.py", GOOD.format(name="same", packet="B % 32"))
    assert main(["check", str(tmp_path)]) == 2
    assert "defined more than once" in capsys.readouterr().out


def test_filter_and_json_format(tmp_path, capsys):
    write(tmp_path, "k.py", GOOD.format(name="bad_one", packet="B % 16")
          + GOOD.split("axes(A=8, B=64)")[1].format(name="typo_two", packet="B % 3Z"))
    assert main(["check", str(tmp_path), "--filter", "typo_*", "--format", "json"]) == 1
    objects = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(o["kind"], o.get("name"), o.get("code")) for o in objects] == [
        ("kernel", "typo_two", "MAP-syntax"), ("summary", None, None)]
    diagnostic = objects[0]["diagnostics"][0]
    assert list(diagnostic) == ["code", "message", "file", "line", "col", "stage", "op", "notes", "help"]
    assert diagnostic["code"] == "MAP-syntax"


def test_github_format(tmp_path, capsys):
    path = write(tmp_path, "typo.py", GOOD.format(name="typo_kernel", packet="B % 3Z"))
    assert main(["check", str(path), "--format", "github"]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("::error file=") and ",line=11," in first and "[MAP-syntax]" in first


def test_kernel_body_python_error_is_usage(tmp_path, capsys):
    path = write(tmp_path, "boom.py", GOOD.format(name="boom", packet="B % 32").replace(
        "    y = (", "    undefined_name\n    y = ("))
    assert main(["check", str(path)]) == 2
    out = capsys.readouterr().out
    assert "error[USAGE]" in out and "NameError" in out and "TYPE-8" not in out
