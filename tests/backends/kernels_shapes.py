"""Small kernels for contraction geometries the examples do not reach: docs/machine/contraction.md's
packet example (pack = 1, tree depth 1, padded packet columns, sequential lane fold)
and a TRF-only time broadcast (tiling 2, a reduced outer time factor with IT = 2)."""

from npu_opt import *

axes(T=4, A=8, B=2, R=16, K=32)

Chip = m("1")
Cluster = m("1 # 2")
One = m("1 # 64")


@device(chip=1)
def packet_pairs(ctx: Context,
                 x: HbmTensor[bf16, Chip, m("T, A, B")],
                 w: HbmTensor[bf16, Chip, m("A, B")]) -> HbmTensor[f32, Chip, m("T, A")]:
    """y[t, a] = x[t, a, 0] * w[a, 0] + x[t, a, 1] * w[a, 1] (docs/machine/contraction.md's example)."""
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, One, m("T, A, B")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, One, m("A, B")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("1"), m("A, B"))
             .collect(m("1"), m("A, B"))
             .to_trf(m("1"), m("A, B")))
    y = (ctx.main.begin(x.view())
         .fetch(m("T"), m("A, B"))
         .collect(m("T"), m("A, B"))
         .contract_outer(w_trf, m("T"), m("A, B"))         # pack = 1, R = 16
         .contract_packet(m("A # 16"))                      # d = 1, columns 8..15 padding
         .contract_time(m("T"))
         .contract_lane(m("T, 1 # 2"), m("A"), LaneMode.SEQUENTIAL)
         .commit_trim(m("A"))
         .commit(m("T, 1 # 2, A")))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("T, A")])


@device(chip=1)
def trf_broadcast(ctx: Context,
                  x: HbmTensor[bf16, Chip, m("K")],
                  w: HbmTensor[bf16, Chip, m("R, K")]) -> HbmTensor[f32, Chip, m("R")]:
    """y[r] = sum_k x[k] * w[r, k]; R / 8 is a TRF-only time factor (tiling 2)."""
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, One, m("K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, One, m("R, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("R % 8, R / 8"), m("K"))
             .collect(m("R % 8, R / 8, K / 16"), m("K % 16"))
             .to_trf(m("R % 8"), m("R / 8, K")))
    y = (ctx.main.begin(x.view())
         .fetch(m("1"), m("K"))
         .collect(m("K / 16"), m("K % 16"))
         .contract_outer(w_trf, m("K / 16, R / 8"), m("K % 16"))   # pack = 1, tiling = 2
         .contract_packet(m("1"))                                  # depth 4
         .contract_time(m("R / 8"))                                # K / 16 summed: IT = 2
         .contract_lane(m("R / 8"), m("R % 8"), LaneMode.INTERLEAVED)
         .commit_trim(m("R % 8"))
         .commit(m("R / 8, R % 8")))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("R")])
