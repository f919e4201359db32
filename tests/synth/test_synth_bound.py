"""synth's bound of a candidate from its parameters (synth/bound.py), which the tuner prunes
by before building a kernel: the rates file's arithmetic on one GEMM by hand, and never above
the candidate's early bound (the DMA context's work, driver/tune_eval.py) where a result is
padded to the tile inside the kernel (it was, by the block copies of the padding's slices)."""

from __future__ import annotations

import pytest

from driver.tune_eval import early_bound
from synth import contraction
from synth.bound import candidate_bound
from synth.space import build, points
from tu_ops.target import for_chips, get_target
from visa.schedule import builtin_rates

GEMM = "out[m,n] = a[m,k] * w[n,k]"
RATES = builtin_rates("rngd")


def _early(spec, point) -> int:
    kernel = build(spec, point)
    tgt = for_chips(get_target("rngd"), kernel.chips)
    return early_bound(kernel.trace(tgt), tgt, RATES)


def test_the_bound_of_a_gemm_is_the_rates_files_arithmetic() -> None:
    # 512 x 512 x 64 i8 -> i32 in one tile of 16 x 16 slices of 32 x 32 results: 3 DMA commands
    # (a, w, the result) of 500 cycles after the 2000-cycle launch; a and w (32 KiB each) reach
    # each of the 16 slices of a tile row / column: 1 MiB at 256 B a cycle; the result (1 MiB)
    # leaves in runs of 32 i32 = 128 bytes, under one 256-byte HBM unit: 8192 packets, each a
    # read-modify-write of 50 units of 256 bytes at 1500 B a cycle
    spec = contraction(GEMM, sizes=dict(m=512, n=512, k=64))
    point = {"placement": "16x16 of 32x32", "trf": "w", "packet": 32, "pieces": 1}
    want = 2000 + 3 * 500 + (16 * 32768 * 2) // 256 + -(-8192 * 50 * 256 // 1500)
    assert candidate_bound(spec, point, RATES) == want
    assert want <= _early(spec, point)


@pytest.mark.parametrize("sizes, placement", [
    (dict(m=96, n=32, k=128), "16x4 of 8x8, on 1/4 of the slices"),      # m padded to 128 in the kernel
    (dict(m=64, n=96, k=64), "4x16 of 16x8, on 1/4 of the slices"),      # n padded to 128
])
def test_a_result_padded_in_the_kernel_is_bounded_below_its_early_bound(sizes, placement) -> None:
    spec = contraction(GEMM, dtype="bf16:f32", sizes=sizes)
    point = {lever: placement if lever == "placement" else values[0] for lever, values in points(spec).items()}
    assert candidate_bound(spec, point, RATES) <= _early(spec, point)


def test_no_bound_for_a_gemv() -> None:
    spec = contraction("out[m] = a[m,k] * x[k]", sizes=dict(m=256, k=64))
    point = {lever: values[0] for lever, values in points(spec).items()}
    assert candidate_bound(spec, point, RATES) is None
