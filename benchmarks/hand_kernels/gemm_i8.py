"""A careful user's i8 GEMM out[M, N] = a[M, K] . w[N, K], M = N = K = 512, i32 sums
(benchmarks/bench_synth.py's baseline of the `gemm_i8` form).

The choices, from the guide and the reference's hand-written matmuls (which give each
slice a tall block and leave slices idle rather than broadcast the stationary operand
further): w's whole K of 128 rows fills a slice's 64 KiB TRF, so a slice computes a
32 x 128 block; 16 x 4 slices (64 of a cluster's 256) cover the result. w is moved to 16
rows of slices (not 64, as 8-row blocks on all slices would), a's rows once, and each
slice's rows of 128 i32 results leave for HBM as 512-byte packets. The contraction takes
64-byte packets of K (OUTER-3's longer packet: twice the MACs a step).
"""

from npu_opt import *

axes(M=512, N=512, K=512)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 128, 1 # 4")


@device(chip=1)
def hand_gemm_i8(ctx: Context,
                 a: HbmTensor[i8, Chip, m("M, K")],
                 w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 128, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 16"), m("K"))
             .collect(m("N % 8, N / 8 % 16, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 16, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 16"), m("K"))
           .collect(m("M % 32, N / 8 % 16, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 16, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 16"))
           .contract_lane(m("M % 32, N / 8 % 16"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 128")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
