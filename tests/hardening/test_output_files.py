"""What `compile` writes stays inside `-o` and never through a planted link (issue 28,
items 7 and 8): a kernel name that is not a plain identifier (`../x`, `a/b`, a NUL, 300
characters) is a USAGE error, not a file outside DIR or a traceback; temporary files are
created exclusively (a symlink planted at a predictable temporary name is not followed)."""

from __future__ import annotations

import json
import os

import pytest

from driver.cli import main
from tests.hardening.kernels import write

RENAME = "def rename(f):\n    f.__name__ = {name!r}\n    return f\n\n"


def renamed(directory, name):
    return write(directory, head=RENAME.format(name=name), replace=("@device(chip=1)\n", "@device(chip=1)\n@rename\n"))


@pytest.mark.parametrize("name", ["../x", "a/b", "x\0y", "k" * 300, "", "a.b", "-x"])
@pytest.mark.parametrize("command", ["compile", "check"])
def test_a_kernel_name_that_cannot_name_a_file_is_a_usage_error(tmp_path, capsys, name, command):
    src = tmp_path / "src"
    src.mkdir()
    renamed(src, name)
    out = tmp_path / "deep" / "out"
    status = main([command, str(src), *(["-o", str(out)] if command == "compile" else [])])
    text = capsys.readouterr().out
    assert status == 2, text
    assert "error[USAGE]" in text and "kernel name" in text and "identifier" in text
    outside = sorted(p.name for p in (tmp_path / "deep").iterdir()) if (tmp_path / "deep").exists() else []
    assert outside in ([], ["out"])
    if command == "compile":
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["manifest.json"]
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["kernels"] == [] and manifest["errors"][0]["code"] == "USAGE"


def test_the_other_kernels_still_compile(tmp_path, capsys):
    renamed(tmp_path, "../evil")
    write(tmp_path, "good.py", name="good_kernel")
    assert main(["compile", str(tmp_path), "-o", str(tmp_path / "out"), "--jobs", "1"]) == 2
    assert (tmp_path / "out" / "good_kernel.visa").is_file()
    assert not (tmp_path / "evil.visa").exists() and not (tmp_path / "evil.fail").exists()


@pytest.mark.parametrize("planted", ["probe", "artifact", "manifest", "record"])
def test_a_symlink_at_a_predictable_temporary_name_is_not_followed(tmp_path, capsys, planted, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    write(src)
    out = tmp_path / "out"
    (out / ".npu-opt-cache").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    pid = 4242
    monkeypatch.setattr(os, "getpid", lambda: pid)
    name = {"probe": f".npu-opt-probe.{pid}", "artifact": f".copy_kernel.visa.{pid}.tmp",
            "manifest": f".manifest.json.{pid}.tmp", "record": f".npu-opt-cache/.run.marshal.{pid}.tmp"}[planted]
    (out / name).symlink_to(victim)
    assert main(["compile", str(src), "-o", str(out), "--jobs", "1"]) == 0, capsys.readouterr().out
    assert victim.read_text() == "precious\n"
    assert (out / "copy_kernel.visa").read_text().startswith("visa ")
    assert not [p for p in out.rglob("*.tmp") if not p.is_symlink()]
