"""`npu-opt compile`'s per-kernel cache (behind the run record): nothing is compiled again
while nothing changed; a kernel file's edit recompiles that file's kernels, a target
file's edit or a change of npu-opt's own code every kernel."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import driver.compile_command as compile_command
from driver import fingerprint, replay
from driver.cli import main

ROOT = Path(__file__).parents[2]
ARGV = ["compile", "kernels", "-o", "out", "--target", "target.toml", "--jobs", "1"]


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """Two example kernel files and a target file in tmp_path; the names of the kernels
    each later compile really compiles."""
    (tmp_path / "kernels").mkdir()
    for name in ("gemv.py", "row_sum.py"):
        shutil.copy(ROOT / "examples" / name, tmp_path / "kernels" / name)
    shutil.copy(ROOT / "tu_ops" / "targets" / "rngd.toml", tmp_path / "target.toml")
    monkeypatch.chdir(tmp_path)
    compiled: list[str] = []
    real = compile_command.compile_kernel

    def counting(kernel, *args, **kwargs):
        compiled.append(kernel.name)
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(compile_command, "compile_kernel", counting)
    return tmp_path, compiled


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_nothing_changed_nothing_compiled(counted, capsys):
    tmp, compiled = counted
    assert main(ARGV) == 0 and sorted(compiled) == ["gemv_kernel", "row_sum_kernel"]
    compiled.clear()
    assert main(ARGV) == 0 and compiled == []
    with pytest.MonkeyPatch.context() as m:  # past the run record: the per-kernel cache answers
        m.setattr(replay, "replay", lambda *a: None)
        assert main(ARGV) == 0 and compiled == []


def test_a_kernel_files_edit_recompiles_its_kernels(counted, capsys):
    """(The others too, today: each entry depends on every file the discovery imported,
    since one kernel file may import another.)"""
    tmp, compiled = counted
    assert main(ARGV) == 0
    compiled.clear()
    _append(tmp / "kernels" / "gemv.py", "\n# edited\n")
    assert main(ARGV) == 0
    assert "gemv_kernel" in compiled


def test_a_target_files_edit_recompiles_every_kernel(counted, capsys):
    tmp, compiled = counted
    assert main(ARGV) == 0
    compiled.clear()
    _append(tmp / "target.toml", "\n# edited\n")
    assert main(ARGV) == 0
    assert sorted(compiled) == ["gemv_kernel", "row_sum_kernel"]


def test_a_change_of_npu_opts_code_recompiles_every_kernel(counted, monkeypatch, capsys):
    tmp, compiled = counted
    assert main(ARGV) == 0
    compiled.clear()
    monkeypatch.setattr(compile_command, "compiler_fingerprint", lambda: "other compiler code")
    monkeypatch.setattr(fingerprint, "_compiler_identity", lambda: ("other compiler code", None))
    monkeypatch.setattr(replay, "stamp_of", lambda paths: (None, 0))  # its files' times changed too
    assert main(ARGV) == 0
    assert sorted(compiled) == ["gemv_kernel", "row_sum_kernel"]
