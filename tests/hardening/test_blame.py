"""Whose error is it (issue 16, "Wrong answers" 4-7): our exceptions are ICE (exit 3);
the user's Python errors, exits and interrupts are USAGE (exit 2) in check and compile
alike; an undefined name in an annotation is the user's USAGE at the parameter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ir.ops
from driver.cli import main
from tests.hardening.kernels import write


def both(path, tmp_path, capsys, *extra):
    """(check status, check output, compile status, compile output)."""
    check = main(["check", str(path), *extra])
    check_out = capsys.readouterr().out
    compiled = main(["compile", str(path), "-o", str(tmp_path / "out"), "--jobs", "1", "--no-cache", *extra])
    return check, check_out, compiled, capsys.readouterr().out


def test_our_exception_inside_a_rule_is_an_ice_not_the_users(tmp_path, capsys, monkeypatch):
    scope = {"__name__": "ir.rules.injected"}
    exec("def check(self):\n    return 1 / 0\n", scope)  # noqa: S102 - a bug in one of our rule checkers
    monkeypatch.setattr(ir.ops.Begin, "check", scope["check"])
    check, out, compiled, cout = both(write(tmp_path), tmp_path, capsys)
    assert (check, compiled) == (3, 3)
    for text in (out, cout):
        assert "error[ICE]" in text and "bug in npu-opt" in text and "fix the Python error" not in text
    assert (tmp_path / "out" / "copy_kernel.fail").read_text().startswith("error[ICE]")


def test_a_library_error_raised_under_our_frames_is_an_ice(tmp_path, capsys, monkeypatch):
    """Issue 28 item 16: attrs raising because our code called it wrongly is our bug, although
    the innermost frame is attrs'."""
    scope = {"__name__": "ir.rules.injected"}
    exec("import attrs\ndef check(self):\n    return attrs.evolve(len)\n", scope)  # noqa: S102
    monkeypatch.setattr(ir.ops.Begin, "check", scope["check"])
    check, out, compiled, cout = both(write(tmp_path), tmp_path, capsys)
    assert (check, compiled) == (3, 3)
    for text in (out, cout):
        assert "error[ICE]" in text and "NotAnAttrsClassError" in text and "error[USAGE]" not in text


def test_a_library_error_from_the_users_call_is_usage(tmp_path, capsys):
    check, out, compiled, cout = both(write(tmp_path, body="import numpy; numpy.zeros(-1)"), tmp_path, capsys)
    assert (check, compiled) == (2, 2)
    assert "error[USAGE]" in out and "kern.py:10" in out and "error[ICE]" not in out + cout


@pytest.mark.parametrize("body", ["x = [][1]", "raise ValueError('no')", "import sys; sys.exit(0)",
                                  "raise SystemExit(0)", "raise KeyboardInterrupt", "raise GeneratorExit"])
def test_the_users_error_in_a_body_is_usage_exit_2_in_check_and_compile(tmp_path, capsys, body):
    check, out, compiled, cout = both(write(tmp_path, body=body), tmp_path, capsys)
    assert (check, compiled) == (2, 2)
    assert "error[USAGE]" in out and "error[USAGE]" in cout and "Traceback" not in out + cout
    assert (tmp_path / "out" / "copy_kernel.fail").read_text().startswith("error[USAGE]")
    assert "kern.py:10" in out  # the line of the body statement


@pytest.mark.parametrize("head", ["import sys\nsys.exit(0)\n", "raise SystemExit(3)\n", "raise KeyboardInterrupt\n"])
def test_exiting_while_imported_is_a_usage_error_of_the_file(tmp_path, capsys, head):
    check, out, compiled, cout = both(write(tmp_path, head=head), tmp_path, capsys)
    assert (check, compiled) == (2, 2)
    assert "error[USAGE]" in out and "while it is imported" in out
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["errors"][0]["file"].endswith("kern.py")


def test_a_systemexit_in_a_body_with_two_jobs_does_not_hang(tmp_path):
    write(tmp_path, "a.py", name="a_kernel", body="raise SystemExit(0)")
    write(tmp_path, "b.py", name="b_kernel")
    write(tmp_path, "c.py", name="c_kernel", body="import os; os._exit(7)")
    write(tmp_path, "d.py", name="d_kernel", body="import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    write(tmp_path, "e.py", name="e_kernel", body="import ctypes, os; ctypes.CDLL(None).kill(os.getpid(), 9)")
    command = [sys.executable, "-m", "npu_opt", "compile", str(tmp_path), "-o", str(tmp_path / "out"),
               "--jobs", "2", "--no-cache"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stdout + run.stderr  # a worker death is reported as an ICE
    assert "Traceback" not in run.stderr + run.stdout
    manifest = {e["name"]: e for e in json.loads((tmp_path / "out" / "manifest.json").read_text())["kernels"]}
    assert manifest["a_kernel"]["code"] == "USAGE" and manifest["b_kernel"]["status"] == "ok"
    # os._exit in the user's code is the kernel's USAGE error (issue 28 item 12), not a dead worker
    assert manifest["c_kernel"]["code"] == "USAGE" and "os._exit(7)" in (tmp_path / "out" / "c_kernel.fail").read_text()
    # a signal sent to itself through os.kill is too (issue 39 item 10); one npu-opt cannot see
    # (libc's kill, a crash in native code) leaves a dead worker: an ICE naming it
    assert manifest["d_kernel"]["code"] == "USAGE" and "SIGKILL sent to its own process" in \
        (tmp_path / "out" / "d_kernel.fail").read_text()
    assert manifest["e_kernel"]["status"] == "ice"
    assert "worker process" in (tmp_path / "out" / "e_kernel.fail").read_text()


@pytest.mark.parametrize("typo, hint", [("HbmTensr", "did you mean `HbmTensor`?"), ("Undefinedthing", None)])
def test_an_undefined_name_in_an_annotation_is_the_users_usage_error(tmp_path, capsys, typo, hint):
    path = write(tmp_path, head="from __future__ import annotations\n",
                 replace=("x: HbmTensor[i8", f"x: {typo}[i8"))
    check, out, compiled, cout = both(path, tmp_path, capsys)
    assert (check, compiled) == (2, 2)
    assert "error[USAGE]" in out and "ICE" not in out + cout and f"`{typo}`" in out
    assert "kern.py:10:34" in out  # the parameter's line, under the annotation
    assert (hint in out) if hint else "did you mean" not in out


def test_a_bad_annotation_reports_one_error_and_no_internal_words(tmp_path, capsys):
    """The newcomer's list: no `begin takes a DmTensorView, not Poisoned` cascade."""
    for i, bad in enumerate([("x: HbmTensor[i8", "x: HbmTensr[i8"), ("x: HbmTensor[i8", "x: HbmTensor[i9")]):
        path = write(tmp_path, f"k{i}.py", head="from __future__ import annotations\n", replace=bad)
        assert main(["check", str(path)]) in (1, 2)
        out = capsys.readouterr().out
        assert out.count("error[") == 1, out
        assert "Poisoned" not in out
