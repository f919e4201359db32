"""The `a by switch` placements of `npu-opt synth` (synth/stream_switch.py): a block of the
streamed operand `a` moves from HBM once, cut into pieces of `k` over the slices of its row
of the tile, and the contraction's stream fetches it through the Switch Engine; with
`a and w by switch` the stationary `w` is broadcast too, over the outer factor of the ring.

Each kernel is checked against an independent numpy oracle on the cpu backend and in the VISA
interpreter (the oracle and the operands of tests/synth/test_synth_switch.py), on named
placements and on seeded random shapes; the bytes it moves against its DMA-copy twin; and
the combined placement is shown to win where `a` outweighs `w`."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from synth import contraction
from synth.offer import proxy_sizes
from synth.space import build, points, source
from synth.stream_switch import stream_ok, stream_piece
from synth.tiling import geometry
from tests.synth.test_synth_switch import GEMM, _bytes, _equals_numpy, _operands, _want
from tu_ops.target import get_target
from backends.npu import compile_kernel
from visa.schedule import builtin_rates, schedule_artifact

BATCHED = "out[b,m,n] = a[b,m,k] * w[b,n,k]"

# (einsum, dtype, sizes, placement): both switched; a alone (w copied); a batch, stepped or side
# by side; a bias and ReLU; a result padded along m inside the kernel (a alone: w's switch
# refuses padded m)
CASES = [
    (GEMM, "bf16:f32", dict(m=128, n=128, k=64), "16x4 of 8x32, on 1/4 of the slices, a and w by switch"),
    (GEMM, "bf16:bf16", dict(m=128, n=128, k=256), "4x8 of 32x16, on 1/8 of the slices, a by switch"),
    (BATCHED, "i8:i32", dict(b=2, m=64, n=128, k=64), "8x2 of 8x64, on 1/16 of the slices, a and w by switch"),
    (BATCHED, "i8:i32", dict(b=2, m=64, n=128, k=64), "1x2 of 64x64, on 1/128 of the slices, a by switch"),
    (BATCHED, "i8:i32", dict(b=4, m=64, n=256, k=128),
     "8x2 of 8x128, 4 batch elements side by side, on 1/4 of the slices, a and w by switch"),
    ("out[m,n] = relu(a[m,k] * w[n,k] + c[n])", "i8:i32", dict(m=128, n=256, k=128),
     "16x4 of 8x64, on 1/4 of the slices, a and w by switch"),
    (GEMM, "i8:i32", dict(m=96, n=256, k=64), "16x2 of 8x128, on 1/8 of the slices, a by switch"),
]


def _run(einsum: str, dtype: str, sizes: dict, placement: str, backend: str, seed: int) -> None:
    spec = contraction(einsum, dtype=dtype, sizes=sizes)
    assert placement in points(spec)["placement"]
    point = dict(placement=placement, trf="w", packet=min(points(spec)["packet"]))
    text = source(spec, point)
    assert "ASlice" in text and f"BROADCAST1(slice1={geometry(placement).sn}, slice0=1)" in text
    kernel = build(spec, point)
    assert npu_opt.check(kernel).ok
    _equals_numpy(spec, kernel, seed, seed, backend)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_an_a_switch_kernel_equals_numpy(case, backend):
    _run(*CASES[case], backend=backend, seed=case)


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_seeded_shapes_a_switch_equals_numpy(seed):
    """Random GEMM shapes and dtypes, drawn until one has an `a by switch` placement (a shape
    whose tiles share a's block over more slices than `k` has 32-byte pieces has none); its
    first, on both backends."""
    rng = np.random.default_rng(seed)
    for _ in range(20):
        dtype = ["i8:i32", "bf16:f32", "bf16:bf16"][rng.integers(3)]
        sizes = dict(m=int(rng.choice([64, 96, 128, 256])), n=int(rng.choice([64, 128, 256])),
                     k=int(rng.choice([128, 256])))
        spec = contraction(GEMM, dtype=dtype, sizes=sizes)
        switched = [p for p in points(spec)["placement"] if p.endswith(("a by switch", "a and w by switch"))]
        if switched:
            break
    assert switched, (dtype, sizes)
    for backend in ("cpu", "visa"):
        _run(GEMM, dtype, sizes, switched[0], backend, seed)


def test_the_switch_moves_each_block_of_a_once():
    """8 x 8 slices of 64 x 64 blocks on a 512^3 i8 GEMM: with DMA copies each block of a
    reaches its 8 slices as 8 copies (2 MiB); spread and switched, once (256 KiB); with w
    switched as well, both once."""
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=512, n=512, k=512))
    point = dict(trf="w", packet=32)
    copies = _bytes(spec, dict(point, placement="8x8 of 64x64, on 1/4 of the slices, w by switch"))
    both = _bytes(spec, dict(point, placement="8x8 of 64x64, on 1/4 of the slices, a and w by switch"))
    assert copies - both == 7 * 512 * 512


def _makespan(spec, placement: str) -> int:
    tgt = get_target("rngd")
    outcome = compile_kernel(build(spec, dict(placement=placement, trf="w", packet=16)), tgt)
    assert outcome.status == "ok", outcome.diagnostics
    return schedule_artifact(outcome.artifact, target=tgt, rates=builtin_rates("rngd")).makespan


def test_both_switched_wins_where_a_outweighs_w():
    """A 1024 x 256 x 256 bf16 GEMM on 64 x 4 slices: a's 512 KiB copied to 4 slices cost more
    DMA time than w's broadcast over the outer ring factor (4 x its block's flits, on the sub
    context while a moves): 16,078 cycles against 18,638 for `w by switch` (a whole row of
    w's block a slice, synth/row_cut.py). On 128 x 2 slices, where `a` is copied to only 2,
    `w by switch` wins since its whole rows move in whole DMA requests (14,542 cycles against
    15,868, the space's best; 16,078 for the piece cut before)."""
    spec = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=1024, n=256, k=256))
    w_only = _makespan(spec, "64x4 of 16x64, w by switch")
    both = _makespan(spec, "64x4 of 16x64, a and w by switch")
    assert both < w_only


def test_which_placements_may_switch_a():
    """Only a's blocks shared by more than one slice along n, `k` whole on a slice and cut into
    `sn` pieces of whole 32-byte flits; offered with `w` stationary only."""
    assert stream_piece(geometry("32x8 of 16x64"), 384, 2) == 48      # 8 pieces of 96 bytes
    assert stream_piece(geometry("64x4 of 8x128"), 512, 1) == 128
    assert not stream_ok(geometry("16x16 of 32x32"), 64, 1)           # 16 pieces of 4 bytes
    assert not stream_ok(geometry("256x1 of 8x256"), 256, 1)          # no slice shares a's block
    assert not stream_ok(geometry("16x2 of 8x128, k over 8 slices"), 4096, 1)
    spec = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=512, n=512, k=384))
    space = spec.space()
    assert any(p["placement"].endswith("a and w by switch") for p in space.points())
    assert not any("a " in p["placement"] and p["placement"].endswith("by switch") and p["trf"] == "a"
                   for p in space.points())


def test_a_proxy_size_keeps_the_pieces_whole():
    """A space too large to run checks its winner at proxy sizes: an `a by switch` point keeps a
    `k` long enough for `sn` pieces of whole flits (16 pieces of 32 `i8`: k = 512, not the
    64 of other points), and runs there equal to numpy (on the cpu backend: the kernels above
    cover the interpreter)."""
    spec = contraction(GEMM, dtype="i8:i32", sizes=dict(m=256, n=256, k=4096))
    point = dict(placement="4x16 of 64x16, on 1/4 of the slices, a by switch", trf="w", packet=32,
                 order="ij", reuse="outer")
    sizes = proxy_sizes(spec, point)
    assert sizes == dict(k=512, m=256, n=256)
    proxy = contraction(GEMM, dtype="i8:i32", sizes=sizes)
    kernel = build(proxy, point)
    arrays = _operands(proxy, 7)
    want = _want(proxy, arrays, None)
    out = np.zeros((256, 256), np.int32)
    npu_opt.run(kernel, *arrays, out, backend="cpu")
    assert np.array_equal(out, want)
