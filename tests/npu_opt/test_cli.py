"""The `npu-opt` command line: --version, --help, explain-mapping."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from driver.cli import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "npu_opt", *args], capture_output=True, text=True)


def test_version_and_help():
    out = run("--version")
    assert out.returncode == 0 and out.stdout.startswith("npu-opt ")
    helped = run("--help")
    assert helped.returncode == 0 and "explain-mapping" in helped.stdout


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().out


def test_explain_mapping_json(capsys):
    assert main(["explain-mapping", "A / 8 # 256, A % 8", "--axes", "A=2048", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["size"] == 2048
    cells = dict((p, c) for p, c in info["cells"])
    assert cells[0] == "{}" and cells[7] == "{A: 7}" and cells[2047] == "{A: 2047}"
    assert info["elided"] == 2048 - 16
    assert info["normalized"] == "A"


def test_explain_mapping_human_shows_padding_and_normal_form(capsys):
    assert main(["explain-mapping", "K # 32", "--axes", "K=20", "--rows", "4"]) == 0
    out = capsys.readouterr().out
    assert "size        32" in out
    assert "31  pad:top" in out
    assert "normalized  (K / 4 # 8, K % 4)" in out


def test_explain_mapping_overshoot_has_no_normal_form(capsys):
    assert main(["explain-mapping", "A, A", "--axes", "A=4", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["normalized"] is None and dict(info["cells"])[15] == "overshoot"


@pytest.mark.parametrize("args", [
    ["explain-mapping", "A / 3", "--axes", "A=8"],
    ["explain-mapping", "Q", "--axes", "A=8"],
    ["explain-mapping", "A", "--axes", "A=8", "A=8"],
    ["explain-mapping", "A", "--axes", "a=8"],
])
def test_explain_mapping_bad_input_is_error_with_code_not_traceback(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error[MAP-") and "Traceback" not in err


def test_bad_axis_argument_is_usage_error():
    out = run("explain-mapping", "A", "--axes", "A8")
    assert out.returncode == 2 and "NAME=SIZE" in out.stderr


def test_targets_lists_rngd_with_its_file_hash(capsys):
    assert main(["targets"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rngd: ") and "9dbe3bc0345cb464de416009c586501dc996c9af59ab48b7822910819da42002" in out
    assert "bf16xbf16->f32" in out


def test_targets_bad_file_is_usage_error(tmp_path, capsys):
    bad = tmp_path / "t.toml"
    bad.write_text("schema = 2\n")
    assert main(["targets", str(bad)]) == 2
    assert "error[USAGE]" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["explain-mapping", "compile", "check", "visa", "targets", "explain", "run",
                                     "schedule"])
def test_every_subcommand_prints_its_help(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: npu-opt {command} ")
    if command == "explain-mapping":  # the example's `%` once broke argparse's help formatting
        assert "A % 8" in out
