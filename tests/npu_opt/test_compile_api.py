"""`npu_opt.compile` (docs/reference/python-api.md) and `--dump-ir`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import npu_opt
from driver.cli import main
from driver.discover import discover
from driver.schedule_command import schedule_command
from visa import parse_visa

ROOT = Path(__file__).parents[2]
KERNELS = {k.name: k for k in discover([str(ROOT / "examples"), str(ROOT / "tests" / "fixtures")]).kernels}


def test_compile_returns_an_artifact_whose_records_parse_from_its_text(tmp_path):
    artifact = npu_opt.compile(KERNELS["gemm_i8_kernel"])
    assert artifact.kernel == "gemm_i8_kernel" and artifact.target == "rngd"
    assert artifact.text.startswith("visa 2\n")
    assert artifact.records == tuple(parse_visa(artifact.text).kernel.ops())
    assert [r.MNEMONIC for r in artifact.records].count("feed_buffer") == 2
    entry = artifact.manifest_entry
    assert entry["status"] == "ok" and entry["artifact"] == "gemm_i8_kernel.visa"
    assert set(entry["timings_ms"]) == {"trace", "lower", "verify", "emit"}
    # the makespan `npu-opt schedule` gives the artifact's text
    path = tmp_path / "gemm_i8_kernel.visa"
    path.write_text(artifact.text)
    out = io.StringIO()
    assert schedule_command([str(path)], "json", out=out) == 0
    assert entry["makespan"] == json.loads(out.getvalue())["makespan"] > 0
    assert artifact.warnings == ()


@pytest.mark.parametrize("name, code", [("r01_half_flit", "COLLECT-2"), ("r15_dm_full", "MEM-3")])
def test_compile_raises_compile_error_with_diagnostics(name, code):
    with pytest.raises(npu_opt.CompileError) as info:
        npu_opt.compile(KERNELS[name])
    assert info.value.diagnostics[0].code == code
    assert str(info.value).startswith(f"error[{code}]")


def test_compile_is_not_in_star_import():
    assert "compile" not in npu_opt.__all__ and callable(npu_opt.compile)


def test_dump_ir_writes_one_file_per_pass(tmp_path):
    dumps = tmp_path / "ir"
    assert main(["compile", str(ROOT / "examples" / "gemv.py"), "-o", str(tmp_path / "out"),
                 "--dump-ir", str(dumps)]) == 0
    names = sorted(p.name for p in dumps.iterdir())
    assert names[0] == "gemv_kernel.00-trace.txt" and len(names) >= 3
    assert all(n.startswith("gemv_kernel.") and n.endswith(".txt") for n in names)
    assert "kernel @gemv_kernel" in (dumps / names[0]).read_text()
