"""Nothing npu-opt ships or caches is trusted blindly (issue 55, item 5): each file carries a
digest made when it was written, and a file that does not match it is rebuilt or ignored,
never printed, parsed or run as it is, never blamed on the user's file."""

from __future__ import annotations

import io
import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import lark
import pytest

from driver import explain
from driver.cli import main
from driver.lark_tables import GRAMMARS
from ir import kept_bundle, lark_cache

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("driver", "npu_opt", "synth", "ir", "tu_ops", "visa", "backends")


def _flipped(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1:]


def _positions(size: int, count: int = 150) -> list[int]:
    return sorted({round(k * (size - 1) / (count - 1)) for k in range(count)})


@pytest.mark.parametrize("damage", ["flipped byte", "not UTF-8", "truncated", "empty"])
def test_a_damaged_explain_page_is_rendered_again(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("NPU_OPT_CACHE_DIR", str(tmp_path))
    first, err = io.StringIO(), io.StringIO()
    assert explain.explain_command("DMA-1", first, err) == 0
    [page] = (tmp_path / "explain").iterdir()
    data = page.read_bytes()
    page.write_bytes({"flipped byte": _flipped(data, len(data) // 2), "not UTF-8": b"\xff\xfe" + data,
                      "truncated": data[: len(data) // 3], "empty": b""}[damage])
    again = io.StringIO()
    assert explain.explain_command("DMA-1", again, err) == 0
    assert again.getvalue() == first.getvalue() and err.getvalue() == ""
    third = io.StringIO()  # the page was written again, whole
    assert explain.explain_command("DMA-1", third, err) == 0 and third.getvalue() == first.getvalue()


@pytest.mark.parametrize("grammar, options", GRAMMARS, ids=[g.stem for g, _ in GRAMMARS])
def test_a_shipped_table_with_a_flipped_byte_is_ignored(grammar, options):
    data = lark_cache.table_file(grammar).read_bytes()
    key = lark_cache.table_key(grammar.read_text(encoding="utf-8"), options, lark.__version__)
    whole = lark_cache.read_tables(lark_cache.table_file(grammar), key)
    assert whole is not None
    for at in _positions(len(data)):
        damaged = Path(os.environ.get("TMPDIR", "/tmp")) / f"npu-opt-test-{os.getpid()}.lalr"
        damaged.write_bytes(_flipped(data, at))
        try:
            got = lark_cache.read_tables(damaged, key)
        finally:
            damaged.unlink()
        assert got is None or got == whole, f"byte {at} of {len(data)} flipped, tables loaded"


def test_a_kept_bundle_with_a_flipped_byte_reads_as_empty(tmp_path):
    path = str(tmp_path / "bundle")
    kept = kept_bundle.KeptBundle(path, "salt", lambda v: True)
    entries = {f"key{n}": compile(f"x = {n} * 'text {n}'", "<test>", "exec") for n in range(20)}
    for key, value in entries.items():
        kept.add(key, value)
    kept.write()
    data = Path(path).read_bytes()
    def read() -> dict:  # every entry of the file, each built (a lookup builds it)
        again = kept_bundle.KeptBundle(path, "salt", lambda v: True)
        return {key: again.get(key) for key in list(again.raw)}

    assert read() == entries
    for at in _positions(len(data)):
        Path(path).write_bytes(_flipped(data, at))
        got = read()
        assert got in ({}, entries), f"byte {at} of {len(data)} flipped, entries read"


def test_a_damaged_pyc_in_the_bytecode_home_is_compiled_again(tmp_path):
    """A checkout that cannot hold bytecode keeps it in the user cache (driver/bytecode_home.py):
    a .pyc damaged there is compiled from its source again, not run, and not fatal."""
    checkout = tmp_path / "checkout"
    for name in (*PACKAGES, "examples"):
        shutil.copytree(ROOT / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (checkout / "driver" / "__pycache__").write_text("")  # no room for bytecode beside the sources
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env |= {"PYTHONPATH": str(checkout), "NPU_OPT_CACHE_DIR": str(tmp_path / "cache")}

    def compile_gemm(run: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "driver.cli", "compile", "examples/gemm.py", "-o",
                               str(tmp_path / f"out{run}"), "--no-cache", "--jobs", "1"], cwd=checkout, env=env,
                              capture_output=True, text=True, timeout=300)

    assert compile_gemm(0).returncode == 0
    want = (tmp_path / "out0" / "gemm_kernel.visa").read_text()
    prefix = tmp_path / "cache" / "bytecode"
    damaged = {}
    for package, name in (("tu_ops", "program"), ("tu_ops", "dma"), ("visa", "printer"), ("npu_opt", "tensors")):
        [pyc] = [p for p in prefix.rglob(f"{name}.*.pyc") if p.parent.name == package]
        data = pyc.read_bytes()
        damaged[pyc] = _flipped(data, len(data) // 2) if name != "dma" else data[: len(data) // 2]
        pyc.write_bytes(damaged[pyc])
    for run in (1, 2):
        done = compile_gemm(run)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert (tmp_path / f"out{run}" / "gemm_kernel.visa").read_text() == want
    assert all(pyc.read_bytes() != data for pyc, data in damaged.items())  # written again


def test_an_internal_failure_is_an_ice_not_a_traceback(monkeypatch, capsys):
    """Whatever escapes a command by npu-opt's own fault exits with the internal-error status."""
    def broken(*args, **kwargs):
        raise RuntimeError("cache in a state nobody planned for")

    monkeypatch.setattr(explain, "cached_output", broken)
    assert main(["explain", "DMA-1"]) == 3
    err = capsys.readouterr().err
    assert "error[ICE]" in err and "RuntimeError: cache in a state nobody planned for" in err
    assert "Traceback" not in err and "please report" in err
