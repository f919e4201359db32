"""The `w by switch` placements of `npu-opt synth` (synth/onchip.py): a block of the stationary operand moves from HBM once, spread over the slices
of the tile that share it, and the Switch Engine broadcasts it into each slice's TRF
(BROADCAST1 over the m factor, innermost on the ring; BROADCAST01 where a slice holds fewer
than 8 whole rows, synth/row_cut.py), instead of one DMA copy per slice.

Each kernel is checked against an independent numpy oracle on the cpu backend and in the VISA
interpreter, and against its DMA-copy twin (same placement without the switch): the same
numbers, fewer bytes between HBM and DM."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from backends.npu import compile_kernel
from synth import contraction
from synth.space import build, points, source
from synth.onchip import switch_ok, switch_piece
from synth.tiling import geometry
from tests.synth import lever_checks
from tu_ops.target import get_target
from visa.schedule import builtin_rates
from visa.schedule.bounds import work

GEMM = "out[m,n] = a[m,k] * w[n,k]"
BATCHED = "out[b,m,n] = a[b,m,k] * w[b,n,k]"

# (einsum, dtype, sizes, placement, extra levers): the block's groups of 8 rows cut over the slices
# (it has a multiple of `sm` of them), or k cut into pieces, or both (16 groups, 4 pieces of k); a result padded along n; batch elements side by side;
# a bias and ReLU; bf16 sums rounded to bf16
CASES = [
    (GEMM, "bf16:f32", dict(m=128, n=96, k=64), "4x1 of 32x128, on 1/64 of the slices, w by switch", {}),
    (BATCHED, "i8:i32", dict(b=4, m=64, n=64, k=64),
     "2x8 of 32x8, 4 batch elements side by side, on 1/4 of the slices, w by switch", {}),
    (GEMM, "bf16:bf16", dict(m=128, n=128, k=256), "8x8 of 16x16, on 1/4 of the slices, w by switch", {}),
    (GEMM, "i8:i32", dict(m=512, n=256, k=64), "2x32 of 256x8, on 1/4 of the slices, w by switch", {}),
    (GEMM, "i8:i32", dict(m=512, n=256, k=128), "64x2 of 8x128, on 1/2 of the slices, w by switch", {}),
    ("out[m,n] = relu(a[m,k] * w[n,k] + c[n])", "i8:i32", dict(m=256, n=256, k=128),
     "4x16 of 64x16, on 1/4 of the slices, w by switch", {}),
]


def _operands(spec, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for _, idx in spec.operands:
        shape = tuple(spec.sizes[i] for i in idx)
        if spec.dtype_in == "i8":
            arrays.append(rng.integers(-128, 128, shape, dtype=np.int8))
        else:  # small integers: every bf16 product and f32 sum of them is exact
            arrays.append(rng.integers(-4, 5, shape).astype(ml_dtypes.bfloat16))
    return arrays


def _want(spec, arrays: list[np.ndarray], bias: np.ndarray | None) -> np.ndarray:
    idx = ["".join(i) for _, i in spec.operands]
    wide = [a.astype(np.int64 if a.dtype == np.int8 else np.float64) for a in arrays]
    acc = np.einsum(f"{idx[0]},{idx[1]}->{''.join(spec.result[1])}", *wide)
    if bias is not None:
        acc = acc + bias
    if "relu(" in spec.text:
        acc = np.maximum(acc, 0)
    if spec.dtype_in == "i8":
        return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)
    return acc.astype(np.float32 if spec.dtype_out == "f32" else ml_dtypes.bfloat16)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_switch_kernel_equals_numpy(case, backend):
    einsum, dtype, sizes, placement, extra = CASES[case]
    spec = contraction(einsum, dtype=dtype, sizes=sizes)
    assert placement in points(spec)["placement"]
    packet = min(points(spec)["packet"])
    point = dict(placement=placement, trf="w", packet=packet, **extra)
    kernel = build(spec, point)
    assert npu_opt.check(kernel).ok
    assert "SwitchConfig.BROADCAST" in source(spec, point)
    _equals_numpy(spec, kernel, case, 99, backend)


def _equals_numpy(spec, kernel, seed: int, bias_seed: int, backend: str) -> None:
    """Run `kernel` of `spec` on seeded operands (and a bias when the einsum adds `c[n]`) and
    compare its unpadded result with the numpy oracle, bit for bit."""
    arrays = _operands(spec, seed)
    n = spec.sizes["n"]
    bias = np.random.default_rng(bias_seed).integers(-1000, 1000, n).astype(np.int32) if "c[n]" in spec.text else None
    host = list(spec.pad(*arrays)) + ([np.pad(bias, (0, spec.padded["n"] - n))] if bias is not None else [])
    _, dout = spec.host_dtypes()
    out = np.zeros(spec.shape(spec.result[1]), dout)
    npu_opt.run(kernel, *host, out, backend=backend)
    got = spec.unpad(out)
    want = _want(spec, arrays, bias)
    assert got.dtype == want.dtype and np.array_equal(got.astype(np.float64), want.astype(np.float64))


def _bytes(spec, point: dict) -> int:
    tgt = get_target("rngd")
    outcome = compile_kernel(build(spec, point), tgt)
    assert outcome.status == "ok", outcome.diagnostics
    return work(outcome.artifact.kernel, builtin_rates("rngd"), tgt).dma_bytes


def test_the_switch_moves_each_block_of_w_once():
    """8 x 8 slices of 64 x 64 blocks on a 512^3 i8 GEMM: with DMA copies each block of w
    reaches its 8 slices as 8 copies (2 MiB); spread and switched, once (256 KiB)."""
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=512))
    copies = _bytes(spec, dict(placement="8x8 of 64x64, on 1/4 of the slices", trf="w", packet=32))
    switched = _bytes(spec, dict(placement="8x8 of 64x64, on 1/4 of the slices, w by switch", trf="w", packet=32))
    assert copies - switched == 7 * 512 * 512


def test_which_placements_may_switch():
    """Only w's blocks shared by more than one slice along m, with k whole on a slice, cut in
    whole groups of 8 rows or whole flits of k; `trf="a"` is not offered with the switch."""
    assert switch_piece(geometry("8x8 of 64x64"), 512, 1) == (8, 1)     # 8 groups of 8 rows over 8 slices
    assert switch_piece(geometry("2x8 of 32x8"), 64, 1) == (1, 2)       # one group: k in 2 pieces of 32 bytes
    assert switch_piece(geometry("64x4 of 8x128"), 512, 1) == (16, 4)   # 16 groups, then k in 4 pieces
    assert not switch_ok(geometry("16x16 of 32x32"), 64, 1)            # 4 groups, 4-byte pieces of k
    assert not switch_ok(geometry("1x16 of 32x32"), 512, 1)            # no slice shares w's block
    assert not switch_ok(geometry("16x2 of 8x128, k over 8 slices"), 4096, 1)
    # k in time blocks: each block's chunk of k is cut (384 bf16 in 2 chunks of 192: 4 pieces of 48, 96 bytes)
    assert switch_ok(geometry("64x4 of 8x128, k in 2 time blocks"), 384, 2)
    assert switch_piece(geometry("64x4 of 8x128, k in 2 time blocks"), 384, 2) == (16, 4)
    # 128 i8 in 2 chunks of 64: 4 pieces of 16 bytes (the whole k's pieces would be 32)
    assert switch_piece(geometry("64x4 of 8x128, k in 2 time blocks"), 128, 1) is None
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=512))
    space = spec.space()
    assert any(p["placement"].endswith("w by switch") for p in space.points())
    assert not any(p["placement"].endswith("w by switch") and p["trf"] == "a" for p in space.points())


def test_w_by_switch_with_k_in_time_blocks_equals_numpy_and_beats_its_copies():
    """The bf16 GEMM of the benchmark (512 x 512 x 384): 128-column blocks hold `k` only in time
    blocks (the TRF; 3 of them, whose chunks are whole 256-byte DMA requests, synth/tiling.py
    `_whole_requests`), and their `w by switch` twin moves w's block once, in one DMA, cut over
    the 64 slices sharing it, instead of one copy per slice. It equals numpy on the cpu backend
    and in the interpreter, and in the model it beats both its DMA-copy twin (w moved 64 times,
    one chunk after another) and `main`'s winner before the twin existed (`32x8 of 16x64, w by
    switch` in 2 pieces, 22,932 cycles: a copied to 8 slices)."""
    spec = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=512, n=512, k=384))
    placement = "64x4 of 8x128, k in 3 time blocks, w by switch"
    assert placement in points(spec)["placement"]
    point = dict(placement=placement, trf="w", packet=32)
    # 128 rows over 64 slices: 2 whole rows of each chunk a slice (synth/row_cut.py)
    assert "SwitchConfig.BROADCAST01(slice1=4, slice0=16, time0=2)" in source(spec, point)
    lever_checks.equals_numpy(spec, point)
    switched = lever_checks.makespan(spec, point)
    assert switched < 22_932
    assert switched < lever_checks.makespan(spec, dict(point, placement="64x4 of 8x128, k in 3 time blocks"))
