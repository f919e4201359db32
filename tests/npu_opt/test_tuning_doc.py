"""docs/tuning.md is real: its tuned GEMM compiles and runs bit-identical to the baseline (its
`$ npu-opt schedule ...` transcripts are console blocks, run by tests/docs/test_blocks.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

from driver.cli import main
import npu_opt
from tests.backends.examples import bf16_uniform, load
from tests.backends.oracles import bf16_bits_to_f32

ROOT = Path(__file__).parents[2]
DOC = (ROOT / "docs" / "tuning.md").read_text()


def test_the_worked_example_compiles_and_its_transcripts_are_executed(tmp_path, monkeypatch):
    """The page's `$ npu-opt schedule ...` transcripts are ```console blocks, which
    tests/docs/test_blocks.py runs and compares; here: both are there, and the two kernels
    compile with their schedules."""
    console = re.findall(r"```console\n(.*?)```", DOC, re.S)
    commands = [line[2:] for block in console for line in block.splitlines() if line.startswith("$ npu-opt ")]
    assert "npu-opt schedule build/gemm_kernel.visa" in commands
    assert "npu-opt schedule build/gemm_kernel.visa build/gemm_wide.visa" in commands
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "gemm.py", tmp_path / "examples" / "gemm.py")
    (tmp_path / "gemm_wide.py").write_text(re.search(r"```python\n(.*?)```", DOC, re.S).group(1))
    monkeypatch.chdir(tmp_path)
    assert main(["compile", "examples/gemm.py", "gemm_wide.py", "-o", "build", "--jobs", "1",
                 "--dump-schedule", "build/schedules"]) == 0
    assert sorted(p.name for p in (tmp_path / "build" / "schedules").iterdir()) == [
        "gemm_kernel.schedule.json", "gemm_wide.schedule.json"]


def test_the_two_tilings_compute_the_same_product(tmp_path):
    (tmp_path / "gemm_wide.py").write_text(re.search(r"```python\n(.*?)```", DOC, re.S).group(1))
    wide = load(tmp_path / "gemm_wide.py").gemm_wide
    base = load(ROOT / "examples" / "gemm.py").gemm_kernel
    rng = np.random.default_rng(7)
    a, b = bf16_uniform(rng, (512, 64)), bf16_uniform(rng, (512, 64))
    got_base = np.asarray(npu_opt.run(base, a, b, backend="visa"))
    got_wide = np.asarray(npu_opt.run(wide, a, b, backend="visa"))
    assert got_wide.shape == (512, 512) and np.array_equal(got_base.view(np.uint16), got_wide.view(np.uint16))
    # against an independent oracle: f32 products of the bf16 inputs (bf16 rounding tolerance)
    ref = bf16_bits_to_f32(a) @ bf16_bits_to_f32(b).T
    assert np.allclose(got_wide.astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def test_the_assumptions_table_shows_the_shipped_rates():
    from visa.schedule import builtin_rates

    r = builtin_rates("rngd")
    facts = [
        f"| HBM bandwidth | {r('hbm', 'chip_bytes_per_cycle'):g} B/cycle per chip |",
        f"| DM bandwidth (DMA side) | {r('dm', 'chip_bytes_per_cycle'):g} B/cycle per chip |",
        f"| DM bandwidth of one slice | {r('dm', 'slice_bytes_per_cycle'):g} B/cycle |",
        f"{r('hbm', 'align_bytes'):g} B, x{r('hbm', 'unaligned_read_factor'):g}, "
        f"x{r('hbm', 'partial_write_factor'):g}",
        f"| DMA Engine | {r('dma', 'engine_bytes_per_cycle'):g} B/cycle, {r('dma', 'request_bytes'):g}-byte requests, "
        f"{r('dma', 'startup_cycles'):g} cycles startup per command |",
        f"| held bank | a run of {r('dm', 'bank_hold_run'):g} accesses on one bank |",
        f"| clock | {r('clock', 'ghz'):g} GHz |",
        f"| command start-up | {r('tensor_unit', 'command_startup_cycles'):g} cycles per MAIN or SUB program |",
        f"| launch | nothing issues before cycle {r('kernel', 'launch_cycles'):g} |",
    ]
    missing = [text for text in facts if text not in DOC]
    assert not missing
