"""`npu-opt tune`: exit status, the space it picks, the files it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driver.cli import main

FILE = str(Path(__file__).with_name("small_space.py"))


def test_a_winner_exits_0_and_writes_its_artifact(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["tune", FILE, "--space", "SPACE", "-o", str(tmp_path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["winner"] == 1 and (tmp_path / "small_gemm.visa").is_file()
    assert [c["status"] for c in report["candidates"]] == ["refused", "ok", "ok", "refused", "ok", "pruned"]


def test_no_winner_exits_1_and_still_reports(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["tune", FILE, "--space", "WRONG", "-o", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "winner: none" in out and (tmp_path / "tune.json").is_file()
    assert not (tmp_path / "small_gemm.visa").exists()


@pytest.mark.parametrize("argv, message", [
    (["--space", "NOPE"], "no `npu_opt.tune.Space` named 'NOPE'"),
    ([], "declares 4 npu_opt.tune.Space object(s) (SPACE, WRONG, BROKEN, ALIKE): name one with --space"),
    (["--space", "SPACE", "--jobs", "0"], "--jobs takes a positive count, not 0"),
])
def test_bad_invocations_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str], message: str) -> None:
    assert main(["tune", FILE, "-o", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert "error[USAGE]" in err and message in err


def test_a_file_that_does_not_load_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad_space.py"
    bad.write_text("raise RuntimeError('no')\n")
    assert main(["tune", str(bad), "-o", str(tmp_path / "out")]) == 2
    assert "cannot load the tune file" in capsys.readouterr().err
