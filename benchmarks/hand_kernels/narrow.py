"""A careful user's i8 GEMM with a narrow result: out[1024, 64] = a[1024, 256] . w[64, 256],
i32 sums (benchmarks/bench_synth.py's baseline of the `narrow` form).

64 columns are one 256-byte row of i32 results: a whole HBM packet, no padding to 128
columns. A slice computes a 64 x 64 block (w's 64 rows, 16 KiB, in the TRF); 16 slices
cover the result, so w moves to 16 slices only.
"""

from npu_opt import *

axes(M=1024, N=64, K=256)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 64, 1 # 16")


@device(chip=1)
def hand_narrow(ctx: Context,
                a: HbmTensor[i8, Chip, m("M, K")],
                w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 64, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8"), m("K"))
             .collect(m("N % 8, N / 8, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 64, N / 8"), m("K"))
           .collect(m("M % 64, N / 8, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 64, N / 8, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 64, N / 8"))
           .contract_lane(m("M % 64, N / 8"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 64, N")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
