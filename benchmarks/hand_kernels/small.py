"""A careful user's bf16 GEMM with a result far smaller than the chip: out[128, 128] =
a[128, 256] . w[128, 256], sums rounded once to bf16 (benchmarks/bench_synth.py's baseline
of the `small` form).

8 slices of a cluster's 256 compute a 16 x 128 block each (w's 128 rows of 512 bytes fill
the TRF); more slices would only move w to more of them, fewer would stream more rows per
slice. Rows of 128 bf16 results are 256-byte HBM packets.
"""

from npu_opt import *

axes(M=128, N=128, K=256)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 16, 1 # 32")


@device(chip=1)
def hand_small(ctx: Context,
               a: HbmTensor[bf16, Chip, m("M, K")],
               w: HbmTensor[bf16, Chip, m("N, K")]) -> HbmTensor[bf16, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 16, K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8"), m("K"))
             .collect(m("N % 8, N / 8, K / 16"), m("K % 16"))
             .to_trf(m("N % 8"), m("N / 8, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 16, N / 8"), m("K"))
           .collect(m("M % 16, N / 8, K / 16"), m("K % 16"))
           .contract_outer(w_trf, m("M % 16, N / 8, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 16, N / 8"))
           .contract_lane(m("M % 16, N / 8"), m("N % 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("N % 8 # 16"))
           .commit_trim(m("N % 8"))
           .commit(m("M % 16, N")))
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("M, N")])
