"""Time blocks of whole DMA requests (synth/tiling.py `_whole_requests`) and `w by switch`'s
chunks moved in one DMA (synth/time_blocks.py `_switch_chunks`), on the bf16 GEMM of
benchmarks/bench_synth.py (512 x 512 x 384): `k` in 2 blocks moves 384-byte rows, each
packet charged 512 bytes of requests; in 3 blocks 256-byte rows, charged what they move.
The 3-block `w by switch` kernel equals numpy on cpu and visa in test_synth_switch.py."""

from __future__ import annotations

from synth import contraction
from synth.space import points, source
from synth.tiling import _whole_requests
from tests.synth import lever_checks

GEMM = "out[m,n] = a[m,k] * w[n,k]"
BF16 = contraction(GEMM, dtype="bf16:f32", sizes=dict(m=512, n=512, k=384))
TWO = dict(placement="64x4 of 8x128, k in 2 time blocks, w by switch", trf="w", packet=16, order="ij",
           reuse="outer", pieces=2, pair=False)
THREE = dict(TWO, placement="64x4 of 8x128, k in 3 time blocks, w by switch")


def test_the_fewest_time_blocks_whose_chunks_are_whole_requests() -> None:
    assert _whole_requests(2, 384, 2, 32) == 3        # bf16: 192 x 2 = 384 bytes -> 128 x 2 = 256
    assert _whole_requests(2, 512, 2, 32) is None      # 512 bytes a chunk: whole already
    assert _whole_requests(2, 384, 1, 64) is None      # i8: 192 bytes; 3 blocks of 128 are not whole either
    assert _whole_requests(1, 96, 2, 32) is None       # 96 bf16 = 192 bytes: no count up to 2 gives whole rows
    offered = points(BF16)["placement"]
    assert TWO["placement"] in offered and THREE["placement"] in offered
    assert "64x4 of 8x128, k in 3 time blocks" in offered


def test_a_switched_w_moves_its_chunks_in_one_dma_and_three_blocks_beat_two() -> None:
    # the whole block of w, each slice's 2 rows with all of k, in one DMA; the chunks are tiles of it in DM
    text = source(BF16, THREE)
    assert 'DmTensor[bf16, Chip, Cluster, WSlice, m("N % 2, K")]' in text
    assert 'whole.view().tile(m("K / 128"), 1, m("N % 2, 1 # 3, K % 128"), t)' in text
    # main's winner (2 blocks, w a DMA a chunk) was 19,836: one DMA for w saves two start-ups and
    # the 384-byte chunks' partial requests (w's rows are 768 bytes whole): 18,824 (pinned in
    # test_synth_overlap.py); 3 blocks save a's partial requests too
    assert lever_checks.makespan(BF16, THREE) == 17_276

