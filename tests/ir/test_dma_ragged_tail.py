"""The DMA engine writes DM in whole 8-byte units. A row whose live run is not a multiple of
8 bytes (`H, R # 8` with |R| = 6, i8 or bf16) moves with its padding when the source pads it
the same way (an HBM element `A, H, R # 8`: the padded cells copied are padding on both
sides), as the reference's `padded_tail_alignment` kernel does; `R # 8` factors as a ragged
`R / 2` piece around the whole digit `R % 2`, and the tail widens that piece. From a dense
source (the next row's data right after the live cells) the row is refused while tracing
(DMA-5), never lowered into a misaligned command (an ICE at DMAOP-4)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from tests.differential.harness import load_kernel
from tu_ops import rngd
from visa.verify import verify_text

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
def test_a_row_of_six_live_cells_from_a_dense_source_is_refused_at_trace_time(dt):
    kernel = load_kernel(RAGGED_ROWS.format(r=6, dt=dt).replace('m("A, H, R # 8")]) ->', 'm("A, H, R")]) ->'))
    report = npu_opt.check(kernel)
    assert not report.ok
    (diag,) = report.diagnostics
    assert diag.code == "DMA-5"
    assert "6 live cell(s)" in diag.message and "pads it the same way" in " ".join(diag.notes)


@pytest.mark.parametrize(("dt", "host", "row_bytes"), [("i8", np.int8, 32), ("bf16", ml_dtypes.bfloat16, 64)])
def test_a_row_of_six_live_cells_padded_on_both_sides_moves_with_its_padding(dt, host, row_bytes):
    kernel = load_kernel(RAGGED_ROWS.format(r=6, dt=dt))
    x = np.random.default_rng(3).integers(-100, 100, (256, 4, 6)).astype(host)
    text = npu_opt.compile(kernel).text
    verify_text(text, rngd())
    (load,) = [line for line in text.splitlines() if "kind=HBM_TO_DM" in line]
    assert f"packet_bytes={row_bytes}," in load              # the 4 padded rows of a slice: 4 x 8 cells
    cpu = npu_opt.run(kernel, x.copy(), backend="cpu")
    assert np.array_equal(cpu.view(np.uint8), x.view(np.uint8))
    assert np.array_equal(npu_opt.run(kernel, x.copy(), backend="visa").view(np.uint8), x.view(np.uint8))


def test_a_padded_row_of_eight_live_bytes_is_lowered_and_runs():
    kernel = load_kernel(RAGGED_ROWS.format(r=8, dt="i8").replace("R # 8", "R # 16"))
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (256, 4, 8)).astype(np.int8)
    cpu = npu_opt.run(kernel, x.copy(), backend="cpu")
    assert np.array_equal(cpu, x)
    assert np.array_equal(npu_opt.run(kernel, x.copy(), backend="visa"), x)
