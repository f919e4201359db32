"""A DMA from HBM into DM moves the live cells of each row and never the padding, and the
DMA engine writes DM in whole 8-byte units: a row whose live run is not a multiple of
8 bytes (`H, R # 8` with |R| = 6, i8 or bf16) is refused while tracing (DMA-5, the
burst rule of the dma page), never lowered into a misaligned command (an ICE at DMAOP-4)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.differential.harness import load_kernel

RAGGED_ROWS = '''\
from npu_opt import *

axes(A=256, H=4, R={r})

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def ragged_rows(ctx: Context, x: HbmTensor[{dt}, Chip, m("A, H, R # 8")]) -> HbmTensor[{dt}, Chip, m("A, H, R")]:
    d = x.to_dm(ctx.tdma, DmTensor[{dt}, Chip, Cluster, m("A"), m("H, R # 8")])
    return d.to_hbm(ctx.tdma, HbmTensor[{dt}, Chip, m("A, H, R")])
'''


@pytest.mark.parametrize("dt", ["i8", "bf16"])
def test_a_row_of_six_live_cells_is_refused_at_trace_time(dt):
    kernel = load_kernel(RAGGED_ROWS.format(r=6, dt=dt))
    report = npu_opt.check(kernel)
    assert not report.ok
    (diag,) = report.diagnostics
    assert diag.code == "DMA-5"
    assert "6 cell(s)" in diag.message


def test_a_padded_row_of_eight_live_bytes_is_lowered_and_runs():
    kernel = load_kernel(RAGGED_ROWS.format(r=8, dt="i8").replace("R # 8", "R # 16"))
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (256, 4, 8)).astype(np.int8)
    cpu = npu_opt.run(kernel, x.copy(), backend="cpu")
    assert np.array_equal(cpu, x)
    assert np.array_equal(npu_opt.run(kernel, x.copy(), backend="visa"), x)
