"""A careful user's i8 GEMM on 2 processing elements (one cluster of 128 slices):
out[M, N] = a[M, K] . w[N, K], M = N = 256, K = 128, i32 sums (benchmarks/bench_synth.py's
baseline of the `pe2` form, `npu-opt synth --pe 2`).

A slice computes a 32 x 128 block (w's 128 rows, 16 KiB, in the TRF): 8 x 2 slices of the
128; w moves to 8 rows of slices, and rows of 128 i32 results are 512-byte packets.
"""

from npu_opt import *

axes(M=256, N=256, K=128)

Chip = m("1")
Cluster = m("1")
Slice = m("M / 32, N / 128, 1 # 8")


@device(chip=1, pe=2)
def hand_pe2(ctx: Context,
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
