"""A checkout that cannot hold bytecode keeps it in npu-opt's user cache (driver/bytecode_home.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import driver
from driver import bytecode_home

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("driver", "npu_opt", "synth", "ir", "tu_ops", "visa", "backends")


@pytest.fixture
def clean_prefix(monkeypatch, tmp_path):
    """No prefix chosen, bytecode allowed, the cache in tmp_path; sys.pycache_prefix restored after."""
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _package_at(tmp_path: Path, monkeypatch, pycache: str) -> Path:
    """`driver.__cached__` pointed into a package folder of tmp_path whose `__pycache__` is
    `pycache`: 'dir' (an empty folder), 'file' (a file in its place) or 'none' (absent)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    if pycache == "dir":
        (pkg / "__pycache__").mkdir()
    elif pycache == "file":
        (pkg / "__pycache__").write_text("not a folder")
    cached = pkg / "__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc"
    monkeypatch.setattr(driver, "__cached__", str(cached))
    return cached


def test_a_writable_checkout_keeps_its_bytecode_beside_the_sources(clean_prefix, monkeypatch):
    for kind in ("dir", "none"):
        shutil.rmtree(clean_prefix / "pkg", ignore_errors=True)
        _package_at(clean_prefix, monkeypatch, kind)
        assert bytecode_home.keep_bytecode_in_cache() is None
        assert sys.pycache_prefix is None and "PYTHONPYCACHEPREFIX" not in os.environ


def test_present_bytecode_is_used_even_when_the_folder_is_read_only(clean_prefix, monkeypatch):
    cached = _package_at(clean_prefix, monkeypatch, "dir")
    cached.write_bytes(b"")
    monkeypatch.setattr(bytecode_home.os, "access", lambda *_: False)
    assert bytecode_home.keep_bytecode_in_cache() is None
    assert sys.pycache_prefix is None


@pytest.mark.parametrize("kind", ["dir", "none", "file"])
def test_a_checkout_that_cannot_take_bytecode_sends_it_to_the_user_cache(clean_prefix, monkeypatch, kind):
    _package_at(clean_prefix, monkeypatch, kind)
    if kind != "file":  # a read-only mount: the folder (or its parent) refuses writes
        monkeypatch.setattr(bytecode_home.os, "access", lambda *_: False)
    want = str(clean_prefix / "cache" / "bytecode")
    assert bytecode_home.keep_bytecode_in_cache() == want
    assert sys.pycache_prefix == want and os.environ["PYTHONPYCACHEPREFIX"] == want
    assert (clean_prefix / "cache" / "bytecode").is_dir()


def test_the_users_own_choice_wins(clean_prefix, monkeypatch):
    _package_at(clean_prefix, monkeypatch, "file")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # PYTHONDONTWRITEBYTECODE, -B
    assert bytecode_home.keep_bytecode_in_cache() is None and sys.pycache_prefix is None
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "pycache_prefix", str(clean_prefix / "mine"))  # PYTHONPYCACHEPREFIX
    assert bytecode_home.keep_bytecode_in_cache() is None
    assert sys.pycache_prefix == str(clean_prefix / "mine")


def test_no_writable_cache_leaves_python_as_it_was(clean_prefix, monkeypatch):
    _package_at(clean_prefix, monkeypatch, "file")
    (clean_prefix / "cache").write_text("a file where the cache folder would go")
    assert bytecode_home.keep_bytecode_in_cache() is None and sys.pycache_prefix is None


def test_a_compile_from_a_checkout_without_room_for_bytecode_fills_the_cache(tmp_path):
    """End to end: `driver/__pycache__` is a file, so Python can write no bytecode there; the
    compile still succeeds, writes no `__pycache__` into the checkout, and leaves the bytecode
    of the modules it loaded under the cache's `bytecode/`, where the next process reads it."""
    checkout = tmp_path / "checkout"
    for name in (*PACKAGES, "examples"):
        shutil.copytree(ROOT / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (checkout / "driver" / "__pycache__").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env |= {"PYTHONPATH": str(checkout), "NPU_OPT_CACHE_DIR": str(tmp_path / "cache")}
    for run in range(2):
        out = tmp_path / f"out{run}"
        done = subprocess.run([sys.executable, "-m", "driver.cli", "compile", "examples/gemm.py", "-o", str(out),
                               "--no-cache", "--jobs", "1"], cwd=checkout, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert (out / "gemm_kernel.visa").is_file()
    assert not list((checkout / "tu_ops").rglob("__pycache__"))
    prefix = tmp_path / "cache" / "bytecode"
    kept = {p.name.split(".")[0] for p in prefix.rglob("*.pyc") if "tu_ops" in p.parts}
    assert {"program", "dma"} <= kept
    # the attrs cache and its bundle load with attrs, after the command line set the prefix
    # (ir/attrs_watch.py): only the few modules before that call compile from source every time
    kept_ir = {p.name.split(".")[0] for p in prefix.rglob("*.pyc") if "ir" in p.parts}
    assert {"attrs_code_cache", "kept_bundle"} <= kept_ir
