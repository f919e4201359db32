"""The compile cache is keyed on everything the import and the trace read (issue 16,
"Wrong answers" 2): helper modules and packages, data files, environment variables; and
`--no-cache`. Artifacts of renamed kernels are removed (the manifest lists what exists)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from driver.cli import main
from tests.hardening.kernels import COPY

KERNEL = COPY.replace("axes(A=4096, B=8)", """import os
from pathlib import Path
from wc_helper import A_SIZE
from wc_pkg.sizes import TIMES

B_SIZE = int((Path(__file__).parent / "b_size.txt").read_text())
axes(A=A_SIZE * TIMES * int(os.environ.get("WC_SCALE", "1")), B=B_SIZE)""").replace("{body}", "pass")


@pytest.fixture
def project(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "wc_pkg").mkdir(parents=True)
    (src / "kern.py").write_text(KERNEL.replace("{name}", "copy_kernel"))
    (src / "wc_helper.py").write_text("A_SIZE = 2048\n")
    (src / "wc_pkg" / "__init__.py").write_text("")
    (src / "wc_pkg" / "sizes.py").write_text("TIMES = 2\n")
    (src / "b_size.txt").write_text("8\n")
    monkeypatch.delenv("WC_SCALE", raising=False)
    yield src
    for name in [n for n, mod in sys.modules.items() if str(getattr(mod, "__file__", "")).startswith(str(tmp_path))]:
        del sys.modules[name]  # what a new `npu-opt` process would not have


def _edit(path: Path, text: str) -> None:
    """Rewrite `path` as an editor saving it a few seconds later would: Python trusts a
    module's bytecode while the source's size and whole-second modification time match the
    ones it recorded, so a same-length rewrite within the same second (these edits are both)
    would be invisible to Python itself in a process that keeps bytecode, whatever npu-opt's
    cache decides."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    later = before + 3_000_000_000
    os.utime(path, ns=(later, later))


def compile_(src: Path, out: Path, *extra: str) -> tuple[int, dict[str, str]]:
    for name in [n for n, mod in sys.modules.items() if str(getattr(mod, "__file__", "")).startswith(str(src))]:
        del sys.modules[name]
    status = main(["compile", str(src / "kern.py"), "-o", str(out), "--jobs", "1", *extra])
    return status, {p.name: p.read_text() for p in sorted(out.iterdir()) if p.suffix in (".visa", ".fail")}


@pytest.mark.parametrize("edit", ["helper module", "helper package", "data file", "environment variable"])
def test_an_edit_of_anything_the_kernel_read_is_recompiled(project, tmp_path, monkeypatch, edit):
    out = tmp_path / "out"
    first = compile_(project, out)
    assert first[0] == 0 and "A=4096" in first[1]["copy_kernel.visa"]
    if edit == "helper module":
        _edit(project / "wc_helper.py", "A_SIZE = 4096\n")
    elif edit == "helper package":
        _edit(project / "wc_pkg" / "sizes.py", "TIMES = 4\n")
    elif edit == "data file":
        (project / "b_size.txt").write_text("16\n")
    else:
        monkeypatch.setenv("WC_SCALE", "2")
    again = compile_(project, out)
    fresh = compile_(project, tmp_path / "fresh", "--no-cache")
    assert again == fresh
    assert again != first


def test_no_cache_neither_reads_nor_writes_the_cache(project, tmp_path):
    out = tmp_path / "out"
    assert compile_(project, out, "--no-cache")[0] == 0
    assert not (out / ".npu-opt-cache").exists()


def test_a_helper_edit_is_seen_by_a_new_process(project, tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "npu_opt", "compile", str(project / "kern.py"), "--jobs", "1", "-o"]
    assert subprocess.run([*command, str(out)], capture_output=True, cwd=tmp_path).returncode == 0
    _edit(project / "wc_helper.py", "A_SIZE = 4096\n")
    again = subprocess.run([*command, str(out)], capture_output=True, cwd=tmp_path, text=True)
    fresh = subprocess.run([*command, str(tmp_path / "fresh")], capture_output=True, cwd=tmp_path, text=True)
    assert (again.returncode, again.stdout) == (fresh.returncode, fresh.stdout)
    assert "A=4096" not in (out / "copy_kernel.visa").read_text(errors="replace") \
        if (out / "copy_kernel.visa").exists() else (out / "copy_kernel.fail").is_file()


def test_a_renamed_kernel_leaves_no_old_artifact(project, tmp_path):
    out = tmp_path / "out"
    assert compile_(project, out)[0] == 0
    (project / "kern.py").write_text(KERNEL.replace("{name}", "renamed_kernel"))
    status, artifacts = compile_(project, out)
    assert status == 0 and list(artifacts) == ["renamed_kernel.visa"]
    listed = [e["artifact"] for e in json.loads((out / "manifest.json").read_text())["kernels"]]
    assert listed == ["renamed_kernel.visa"]


def test_other_files_artifacts_are_kept(project, tmp_path):
    out = tmp_path / "out"
    (project / "other.py").write_text(KERNEL.replace("{name}", "other_kernel"))
    assert main(["compile", str(project / "other.py"), "-o", str(out), "--jobs", "1"]) == 0
    assert compile_(project, out)[0] == 0
    assert (out / "other_kernel.visa").is_file() and (out / "copy_kernel.visa").is_file()


def test_a_file_that_stops_importing_loses_its_artifact_and_is_listed(project, tmp_path):
    """Issue 16, "Wrong answers" 3."""
    out = tmp_path / "out"
    assert compile_(project, out)[0] == 0
    (project / "kern.py").write_text("raise RuntimeError('broken on purpose')\n" + KERNEL.replace("{name}", "copy_kernel"))
    status, artifacts = compile_(project, out)
    assert status == 2 and artifacts == {}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kernels"] == []
    assert [Path(e["file"]).name for e in manifest["errors"]] == ["kern.py"]
    assert "RuntimeError" in manifest["errors"][0]["message"]
