"""`npu-opt visa` and `schedule` treat an artifact as data (issue 28, items 10 and 11): its
`target "..."` line names a built-in target or one the user passed with `--target FILE`,
never a path to open (`/dev/zero`, a FIFO); `--exec` verifies the artifact first, so
declared sizes it does not back (I=10^12) are a refused artifact, not an allocation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from driver.cli import main
from tests.hardening.kernels import RNGD_TOML, write


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("visa")
    write(root)
    assert main(["compile", str(root / "kern.py"), "-o", str(root / "out"), "--jobs", "1", "--no-cache"]) == 0
    return root / "out" / "copy_kernel.visa"


def _edited(artifact: Path, tmp_path: Path, old: str, new: str) -> Path:
    text = artifact.read_text()
    assert old in text
    path = tmp_path / "edited.visa"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("command", [["visa"], ["visa", "--verify"], ["schedule"], ["schedule", "--no-verify"]])
def test_a_target_line_naming_a_file_is_not_opened(artifact, tmp_path, capsys, command):
    toml = tmp_path / "t.toml"
    toml.write_text(RNGD_TOML)
    edited = _edited(artifact, tmp_path, 'target "rngd"', f'target "{toml}"')
    os.chmod(toml, 0)  # opening it would fail with EACCES, but as root it still opens: check the message
    assert main([*command, str(edited)]) == 2
    err = capsys.readouterr().err
    assert "unknown target" in err and "--target" in err and "cannot read" not in err


def test_a_target_line_naming_a_fifo_does_not_hang(artifact, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    edited = _edited(artifact, tmp_path, 'target "rngd"', f'target "{fifo}"')
    done = subprocess.run([sys.executable, "-m", "npu_opt", "visa", str(edited)], capture_output=True, text=True,
                          timeout=20)
    assert done.returncode == 2 and "unknown target" in done.stderr


def test_a_target_file_named_on_the_command_line_is_used(artifact, tmp_path, capsys):
    toml = tmp_path / "mine.toml"
    toml.write_text(RNGD_TOML.replace('name = "rngd"', 'name = "mine"', 1))
    assert 'name = "mine"' in toml.read_text()
    from tu_ops.target import load_target
    from visa.printer import target_hash

    mine = load_target(toml)
    edited = _edited(artifact, tmp_path, artifact.read_text().split("\n")[2],
                     f'target "mine" sha256 "{target_hash(mine)}"')
    assert main(["visa", str(edited), "--verify"]) == 2
    capsys.readouterr()
    assert main(["visa", str(edited), "--verify", "--target", str(toml)]) == 0, capsys.readouterr().err
    assert main(["visa", str(edited), "--verify", "--target", "rngd"]) == 2
    assert "built for target `mine`" in capsys.readouterr().err


def test_exec_verifies_before_allocating(artifact, tmp_path, capsys):
    edited = _edited(artifact, tmp_path, "axes A=4096, B=8", "axes A=1000000000000, B=8")
    np.save(tmp_path / "x.npy", np.zeros((4096, 8), np.int8))
    status = main(["visa", str(edited), "--exec", "--input", f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "ICE" not in err and "allocate" not in err
    assert not (tmp_path / "o" / "out.npy").exists()


def test_schedule_refuses_an_artifact_the_verifier_refuses(artifact, tmp_path, capsys):
    edited = _edited(artifact, tmp_path, "packet_bytes=128", "packet_bytes=64")
    assert main(["visa", str(edited), "--verify"]) == 2
    verify_says = capsys.readouterr().err
    assert main(["schedule", str(edited)]) == 2
    assert capsys.readouterr().err == verify_says
    assert main(["schedule", str(edited), "--no-verify"]) == 0
