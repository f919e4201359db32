"""docs/tuning.md is real: its tuned GEMM compiles, runs bit-identical to the baseline, and
every `$ npu-opt schedule ...` transcript in it is what the command prints today."""

from __future__ import annotations

import contextlib
import io
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


def transcripts():
    """(command line, expected output) of every ```text block that starts with `$ npu-opt`."""
    for block in re.findall(r"```text\n(.*?)```", DOC, re.S):
        head, _, body = block.partition("\n")
        if head.startswith("$ npu-opt "):
            yield head[2:].split()[1:], body.rstrip("\n")


def test_the_worked_example_compiles_and_every_transcript_matches(tmp_path, monkeypatch):
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "gemm.py", tmp_path / "examples" / "gemm.py")
    (tmp_path / "gemm_wide.py").write_text(re.search(r"```python\n(.*?)```", DOC, re.S).group(1))
    monkeypatch.chdir(tmp_path)
    assert main(["compile", "examples/gemm.py", "gemm_wide.py", "-o", "build", "--jobs", "1",
                 "--dump-schedule", "build/schedules"]) == 0
    seen = 0
    for argv, expected in transcripts():
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(argv) == 0
        assert out.getvalue().rstrip("\n") == expected, " ".join(argv)
        seen += 1
    assert seen == 2


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
    ]
    missing = [text for text in facts if text not in DOC]
    assert not missing
