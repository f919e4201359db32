"""A hostile environment gives a clear error or a normal run, never a traceback (issue 28,
item 13): stdout on /dev/full or closed, an ASCII-only stdout, a deleted working
directory, symlink loops, few file descriptors, a file-shaped or unwritable cache,
`manifest.json` or `<kernel>.visa` that are directories (no `.tmp` left behind), a kernel
file named `types.py`, a kernel file that starts with a UTF-8 byte-order mark."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from driver.cli import main
from tests.hardening.kernels import write

ROOT = Path(__file__).parents[2]


def npu_opt(*args: str, cwd: Path | None = None, **kwargs) -> subprocess.CompletedProcess:
    env = os.environ | {"PYTHONPATH": str(ROOT)} | kwargs.pop("env", {})
    return subprocess.run([sys.executable, "-m", "npu_opt", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120, **kwargs)


@pytest.mark.parametrize("stdout", ["/dev/full", "closed"])
@pytest.mark.parametrize("command", ["check", "compile"])
def test_an_unwritable_stdout_is_a_usage_error(tmp_path, stdout, command):
    path = write(tmp_path)
    args = [sys.executable, "-m", "npu_opt", command, str(path), "-o", str(tmp_path / "out")][: 5 if command == "check" else 7]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    if stdout == "closed":
        done = subprocess.run(args, stderr=subprocess.PIPE, text=True, env=env, timeout=120,
                              preexec_fn=lambda: os.close(1))
    else:
        with open("/dev/full", "w") as full:
            done = subprocess.run(args, stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "error[USAGE]" in done.stderr and "Traceback" not in done.stderr


def test_an_ascii_only_stdout_gets_escapes(tmp_path):
    path = write(tmp_path, body="raise ValueError('d\u00e9j\u00e0 \u2192')")
    done = npu_opt("check", str(path), env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "d\\xe9j\\xe0 \\u2192" in done.stdout


def test_a_deleted_working_directory_is_a_usage_error(tmp_path):
    path = write(tmp_path)
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(f"cd {gone} && rmdir {gone} && exec {sys.executable} -m npu_opt check {path}", shell=True,
                          capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 2 and "working directory" in done.stderr and "Traceback" not in done.stderr


def test_symlink_loops(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    write(src)
    (src / "self").symlink_to(src)
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert main(["check", str(src)]) == 0
    assert "checked 1 kernel(s): 1 ok" in capsys.readouterr().out
    assert main(["check", str(src), str(tmp_path / "a")]) == 2
    out = capsys.readouterr().out
    assert "error[USAGE]" in out and str(tmp_path / "a") in out


def test_few_file_descriptors(tmp_path):
    path = write(tmp_path)
    for jobs in ("1", "2"):
        done = subprocess.run([sys.executable, "-m", "npu_opt", "compile", str(path), "-o", str(tmp_path / jobs),
                               "--jobs", jobs, "--no-cache"], capture_output=True, text=True, timeout=120,
                              env=os.environ | {"PYTHONPATH": str(ROOT)},
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (24, 24)))
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode in (0, 2), done.stderr
        if done.returncode == 0:
            assert (tmp_path / jobs / "copy_kernel.visa").is_file()


@pytest.mark.parametrize("shape", ["file", "read-only"])
def test_an_unusable_cache_compiles_without_it(tmp_path, capsys, shape, monkeypatch):
    path = write(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    if shape == "file":
        (out / ".npu-opt-cache").write_text("not a directory\n")
    else:
        (out / ".npu-opt-cache").mkdir()
        real = os.open

        def refuse(file, flags, *args, **kwargs):  # as for a non-root user on a 0555 directory
            if ".npu-opt-cache" in os.fsdecode(file) and flags & os.O_CREAT:
                raise PermissionError(13, "Permission denied", file)
            return real(file, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)
    for _ in range(2):
        assert main(["compile", str(path), "-o", str(out), "--jobs", "1"]) == 0
        assert "copy_kernel.visa" in capsys.readouterr().out
    assert (out / "copy_kernel.visa").read_text().startswith("visa ")


@pytest.mark.parametrize("blocked", ["manifest.json", "copy_kernel.visa", "copy_kernel.fail"])
def test_an_output_that_is_a_directory_is_a_usage_error(tmp_path, capsys, blocked):
    path = write(tmp_path, body="raise ValueError('refused')" if blocked.endswith(".fail") else "pass")
    write(tmp_path, "other.py", name="other_kernel")
    out = tmp_path / "out"
    (out / blocked).mkdir(parents=True)
    assert main(["compile", str(tmp_path), "-o", str(out), "--jobs", "1"]) == 2
    text = capsys.readouterr().out
    assert "error[USAGE]" in text and "cannot write" in text and blocked.split(".")[0] in text
    assert not list(out.rglob("*.tmp"))
    assert (out / "other_kernel.visa").is_file()
    if blocked != "manifest.json":
        manifest = json.loads((out / "manifest.json").read_text())
        assert [e["name"] for e in manifest["kernels"]] == ["other_kernel"]


def test_a_kernel_file_named_like_a_standard_module(tmp_path, capsys):
    write(tmp_path, "types.py", name="types_kernel")
    write(tmp_path, "json.py", name="json_kernel")
    import types

    assert main(["compile", str(tmp_path), "-o", str(tmp_path / "out"), "--jobs", "1", "--no-cache"]) == 0, \
        capsys.readouterr().out
    assert sys.modules["types"] is types
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert sorted(e["name"] for e in manifest["kernels"]) == ["json_kernel", "types_kernel"]


def test_a_kernel_file_with_a_byte_order_mark(tmp_path, capsys):
    path = write(tmp_path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert main(["compile", str(path), "-o", str(tmp_path / "out"), "--jobs", "1"]) == 0, capsys.readouterr().out
    assert "loc " + str(path) + ":11:11" in (tmp_path / "out" / "copy_kernel.visa").read_text()
