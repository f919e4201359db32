"""A careful user's batched i8 GEMM out[B, M, N] = a[B, M, K] . w[B, N, K], B = 8,
M = N = 128, K = 64, i32 sums (benchmarks/bench_synth.py's baseline of the `batched` form).

The batch goes on the slices, as the reference's hand-written kernels put every
independent axis: each of 8 x 4 slices computes a 32 x 128 block of one problem (its w's
128 rows, 8 KiB, in the TRF), all 8 problems at once; rows of 128 i32 results leave as
512-byte packets.
"""

from npu_opt import *

axes(B=8, M=128, N=128, K=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("B, M / 32, 1 # 8")


@device(chip=1)
def hand_batched(ctx: Context,
                 a: HbmTensor[i8, Chip, m("B, M, K")],
                 w: HbmTensor[i8, Chip, m("B, N, K")]) -> HbmTensor[i32, Chip, m("B, M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8"), m("K"))
             .collect(m("N % 8, N / 8, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8"), m("K"))
           .collect(m("M % 32, N / 8, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8"), m("K"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8"))
           .contract_lane(m("M % 32, N / 8"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("B, M, N")])
