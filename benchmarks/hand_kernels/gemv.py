"""A careful user's i8 GEMV y[M] = a[M, K] . x[K], M = K = 4096, i32 results
(benchmarks/bench_synth.py's baseline of the `gemv` form).

The matrix is the traffic: 16 MiB that should cross from HBM in long packets, once. Each
of 256 slices takes 16 whole rows (64 KiB, contiguous in HBM) into its TRF, 8 lanes x 2,
and x (4 KiB, broadcast to the slices) streams past them twice, 64 bytes a step; a
slice's 16 sums leave as one 64-byte piece. (`gemv_k_split.py` beside this file makes
the reference's `matmul_4096` choice instead, K over the slices and the inter-slice
reducer: its 32-byte pieces of the matrix cost a DMA request each.)
"""

from npu_opt import *

axes(M=4096, K=4096)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 16")


@device(chip=1)
def hand_gemv(ctx: Context,
              a: HbmTensor[i8, Chip, m("M, K")],
              x: HbmTensor[i8, Chip, m("K")]) -> HbmTensor[i32, Chip, m("M")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 16, K")])
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("K")])
    a_trf = (ctx.sub.begin(a.view())
             .fetch(m("M % 8, M / 8 % 2"), m("K"))
             .collect(m("M % 8, M / 8 % 2, K / 32"), m("K % 32"))
             .to_trf(m("M % 8"), m("M / 8 % 2, K")))
    y = (ctx.main.begin(x.view())
         .fetch(m("M / 8 % 2"), m("K"))
         .collect(m("M / 8 % 2, K / 32"), m("K % 32"))
         .contract_outer(a_trf, m("M / 8 % 2, K / 64"), m("K % 64"))
         .contract_packet(m("1"))
         .contract_time(m("M / 8 % 2"))
         .contract_lane(m("M / 8 % 2"), m("M % 8"), LaneMode.INTERLEAVED)
         .commit_trim(m("M % 8"))
         .commit(m("M % 16")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M")])
