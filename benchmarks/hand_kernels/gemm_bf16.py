"""A careful user's bf16 GEMM out[M, N] = a[M, K] . w[N, K], M = N = 512, K = 384, f32 sums
(benchmarks/bench_synth.py's baseline of the `gemm_bf16` form).

A slice's TRF (64 KiB) holds at most 85 rows of w's 768-byte rows, so 64: a slice computes
a 64 x 64 block, 8 x 8 slices (64 of a cluster's 256) cover the result; w moves to 8 rows
of slices, and each slice's rows of 64 f32 results are whole 256-byte HBM packets. The
contraction takes 64-byte packets (32 bf16) of K.
"""

from npu_opt import *

axes(M=512, N=512, K=384)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 64, N / 64, 1 # 4")


@device(chip=1)
def hand_gemm_bf16(ctx: Context,
                   a: HbmTensor[bf16, Chip, m("M, K")],
                   w: HbmTensor[bf16, Chip, m("N, K")]) -> HbmTensor[f32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 64, K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 64, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 8"), m("K"))
             .collect(m("N % 8, N / 8 % 8, K / 16"), m("K % 16"))
             .to_trf(m("N % 8"), m("N / 8 % 8, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 64, N / 8 % 8"), m("K"))
           .collect(m("M % 64, N / 8 % 8, K / 16"), m("K % 16"))
           .contract_outer(w_trf, m("M % 64, N / 8 % 8, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 64, N / 8 % 8"))
           .contract_lane(m("M % 64, N / 8 % 8"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 64, N % 64")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("M, N")])
