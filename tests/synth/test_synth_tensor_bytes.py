"""The bytes a synth winner's DMAs move of each tensor (driver/synth_explain.py `tensor_bytes`,
the `bytes moved per tensor` line of synth.txt): what makes a DMA-bound winner move more
than the contraction needs. With `w by switch` each block of `w` moves from HBM once, and
each block of `a` goes to every one of the `SN` slices of its row of the tile: `a` moves
`SN` times. With `a and w by switch` both move once (docs/synth.md, "How good is the winner")."""

from __future__ import annotations

import pytest

from backends.npu import compile_kernel
from driver.synth_explain import tensor_bytes
from synth import contraction
from synth.space import build
from tu_ops.target import get_target
from visa.schedule import builtin_rates
from visa.schedule.bounds import work

GEMM = "out[m,n] = a[m,k] * w[n,k]"
M, N, K = 128, 256, 64
SPEC = contraction(GEMM, sizes=dict(m=M, n=N, k=K))  # i8 -> i32


def _moved(spec, point: dict) -> tuple[dict[str, int], int]:
    tgt = get_target("rngd")
    outcome = compile_kernel(build(spec, point), tgt)
    assert outcome.status == "ok", outcome.diagnostics
    kernel = outcome.artifact.kernel
    return tensor_bytes(kernel, builtin_rates("rngd"), tgt), work(kernel, builtin_rates("rngd"), tgt).dma_bytes


@pytest.mark.parametrize(("placement", "a_copies"), [
    ("16x4 of 8x64, on 1/4 of the slices, w by switch", 4),
    ("2x32 of 64x8, on 1/4 of the slices, w by switch", 32),
    ("32x2 of 4x128, on 1/4 of the slices, w by switch", 2),
    ("32x2 of 4x128, on 1/4 of the slices, a and w by switch", 1),
])
def test_a_moves_once_per_slice_of_its_row_and_a_switched_w_once(placement: str, a_copies: int) -> None:
    moved, total = _moved(SPEC, dict(placement=placement, trf="w", packet=32))
    # one tile covers the 128 x 256 result: each operand byte reaches its slices in one pass
    assert moved == {"a": M * K * a_copies, "w": N * K, "out": M * N * 4}
    assert sum(moved.values()) == total


def test_a_rolled_tile_loop_counts_each_iteration_as_work_does() -> None:
    # 512 x 512 x 64: tiles of 256 x 256 on 1/4 of the slices, in rolled loops (reuse="outer"
    # keeps a's row block over j, w's block moves again every tile)
    spec = contraction(GEMM, sizes=dict(m=512, n=512, k=64))
    point = dict(placement="32x2 of 8x128, on 1/4 of the slices, w by switch", trf="w", packet=32, order="ij",
                 reuse="outer")
    moved, total = _moved(spec, point)
    assert moved == {"a": 512 * 64 * 2, "w": 512 * 64 * 2, "out": 512 * 512 * 4}
    assert sum(moved.values()) == total
