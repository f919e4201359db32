"""The newcomer's list (issue 16): typos, a missing DMA engine, check --target, cached
caret widths, explain listing, shadowed module names."""

from __future__ import annotations

import pytest

from driver.cli import main
from tests.hardening.kernels import RNGD_TOML, write


def check(capsys, *args) -> tuple[int, str]:
    status = main(["check", *map(str, args)])
    return status, capsys.readouterr().out


def test_a_typo_in_a_stage_method_is_type1_with_caret_offers_and_did_you_mean(tmp_path, capsys):
    path = write(tmp_path, replace=(".fetch_cast(i32)", ".fetch_cats(i32)"))
    status, out = check(capsys, path)
    assert status == 1 and out.count("error[") == 1, out
    assert "error[TYPE-1]: a FetchStream has no method `fetch_cats`" in out or "no method `fetch_cats`" in out
    assert "did you mean `fetch_cast`?" in out and "offers" in out
    line = next(x for x in out.splitlines() if "fetch_cats(i32)" in x)
    caret = out.splitlines()[out.splitlines().index(line) + 1]
    assert caret.index("^") == line.index("fetch_cats") and caret.count("^") == len("fetch_cats")


def test_to_dm_without_the_engine_says_the_engine_is_missing(tmp_path, capsys):
    path = write(tmp_path, replace=("x.to_dm(ctx.tdma, DmTensor", "x.to_dm(DmTensor"))
    status, out = check(capsys, path)
    assert status == 1 and "missing its DMA engine operand" in out and "`dst`" not in out
    assert out.count("error[") == 1, out


def test_check_takes_a_target(tmp_path, capsys):
    target = tmp_path / "t.toml"
    target.write_text(RNGD_TOML.replace('name = "rngd"', 'name = "mine"'))
    assert check(capsys, write(tmp_path), "--target", target)[0] == 0
    status, out = check(capsys, write(tmp_path), "--target", "no-such-target")
    assert status == 2 and "cannot load target" in out


def test_output_from_the_cache_keeps_the_caret_width(tmp_path, capsys):
    path = write(tmp_path, replace=(".fetch_cast(i32)", ".fetch_cats(i32)"))
    args = ["compile", str(path), "-o", str(tmp_path / "out"), "--jobs", "1"]
    assert main(args) == 1
    first = capsys.readouterr().out
    assert main(args) == 1
    assert capsys.readouterr().out == first and "^^^^^^^^^^" in first


def test_explain_without_a_code_lists_every_code_by_stage(capsys):
    assert main(["explain"]) == 0
    out = capsys.readouterr().out
    for code in ("COLLECT-2", "MAP-syntax", "MAP-limit", "USAGE", "ICE"):
        assert any(line.split()[:1] == [code] for line in out.splitlines()), code
    assert "mapping" in out


@pytest.mark.parametrize("name", ["ir.py", "visa.py"])
def test_a_user_module_named_like_an_npu_opt_package_is_reported(tmp_path, capsys, name):
    (tmp_path / name).write_text("SLICE = 3\n")
    path = write(tmp_path, head=f"from {name[:-3]} import SLICE\n")
    status, out = check(capsys, path)
    assert status == 2 and f"`{name[:-3]}`" in out and "rename" in out


@pytest.mark.parametrize("command", ["check", "compile"])
def test_json_format_has_one_record_per_kernel_and_a_summary(tmp_path, capsys, command):
    import json

    write(tmp_path, "a.py", name="good_kernel")
    write(tmp_path, "b.py", name="typo_kernel", replace=(".fetch_cast(i32)", ".fetch_cats(i32)"))
    (tmp_path / "c.py").write_text("raise ValueError('broken')\n")
    extra = ["-o", str(tmp_path / "out"), "--jobs", "1"] if command == "compile" else []
    status = main([command, str(tmp_path), "--format", "json", *extra])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert status == 2
    assert [r["kind"] for r in records] == ["error", "kernel", "kernel", "summary"]
    assert records[0]["file"].endswith("c.py") and "ValueError" in records[0]["message"]
    good, typo = records[1], records[2]
    assert (good["name"], good["status"], good["code"], good["diagnostics"]) == ("good_kernel", "ok", None, [])
    assert (typo["name"], typo["status"], typo["code"]) == ("typo_kernel", "refused", "TYPE-1")
    assert typo["file"].endswith("b.py") and typo["diagnostics"][0]["code"] == "TYPE-1"
    assert records[3] == {"kind": "summary", "kernels": 2, "ok": 1, "refused": 1, "ice": 0, "input_errors": 1,
                          "exit": 2}


def test_npu_opt_testing_after_a_bare_import():
    import subprocess
    import sys

    code = "import npu_opt; print(npu_opt.testing.assert_close.__name__)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "assert_close\n"


def test_run_help_says_how_bf16_results_are_written(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "bit patterns (uint16 for bf16" in text and "ml_dtypes" in text


def test_the_slice_padding_help_brackets_a_several_term_mapping():
    from ir.mapping.api import m
    from ir.machine import RNGD
    from ir.mapping.levels import slice_

    message = slice_(m("M / 32, N / 32", axes={"M": 256, "N": 128}), RNGD.SLICE_SIZES).message
    assert "`(M / 32, N / 32) # 64`" in message
    assert "`A / 8 # 128`" in slice_(m("A / 8", axes={"A": 800}), RNGD.SLICE_SIZES).message


@pytest.mark.parametrize("mode, coloured", [("always", True), ("never", False), ("auto", False)])
def test_colour_follows_the_color_flag(tmp_path, capsys, mode, coloured):
    path = write(tmp_path, replace=(".fetch_cast(i32)", ".fetch_cats(i32)"))
    status, out = check(capsys, path, "--color", mode)
    assert status == 1
    assert ("\x1b[31merror[TYPE-1]:" in out) is coloured and ("\x1b[36m" in out) is coloured
    assert ("\x1b[" in out) is coloured  # auto: captured output is not a terminal


def test_no_color_disables_auto(monkeypatch):
    from driver.color import use_color

    class Tty:
        def isatty(self):
            return True

    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto", Tty()) and use_color("always", Tty())
    monkeypatch.delenv("NO_COLOR")
    assert use_color("auto", Tty())
