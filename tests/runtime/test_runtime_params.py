"""Scalar parameters inside struct parameters, and on the command line (docs/runtime.md)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np

import npu_opt
from npu_opt import *

axes(A=64, F=8, W=8)

Chip = m("1")
Cluster = m("1 # 2")
Rows = DmTensor[i32, Chip, Cluster, m("A"), m("F, W")]


@dataclasses.dataclass
class Job:
    data: HbmTensor[i32, Chip, m("A, F, W")]
    keep: HbmScalar[bool]


@device(chip=1)
def maybe_clear(ctx: Context, job: Job) -> HbmTensor[i32, Chip, m("A, F, W")]:
    d = job.data.to_dm(ctx.tdma, Rows)
    with ctx.when(~job.keep.to_spm(ctx.tdma)):
        d.view_mut().memset(ctx.sub, 0)
    return d.to_hbm(ctx.tdma)


def test_a_scalar_field_of_a_struct_parameter():
    x = np.random.default_rng(3).integers(-9, 9, (64, 8, 8)).astype(np.int32)
    for keep in (True, False):
        for backend in ("cpu", "visa"):
            got = npu_opt.run(maybe_clear, Job(x, keep), backend=backend)
            assert np.array_equal(got, x if keep else np.zeros_like(x))
    assert "job.keep" in npu_opt.compile(maybe_clear).text


def test_npu_opt_run_takes_a_zero_d_npy_for_a_scalar(tmp_path):
    x = np.arange(64 * 8 * 8, dtype=np.int32).reshape(64, 8, 8)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "n.npy", np.array(2, np.int64))
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "npu_opt", "run", "tests/runtime/kernels.py::nested",
                           "--input", f"x={tmp_path / 'x.npy'}", "--input", f"lo={tmp_path / 'n.npy'}",
                           "--input", f"hi={tmp_path / 'n.npy'}", "--backend", "visa", "-o", str(tmp_path)],
                          cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not np.load(tmp_path / "out.npy").any()          # lo == hi: every group skipped
