"""A batched bf16 GEMM with one independent 8 x 16 x 64 problem per slice: every slice reads
TRF weights of its own (no broadcast rows), the layout whose rows the interpreter's exact
kernel tiles by their own slot pairs, with their weights laid out row by row."""

from npu_opt import *

axes(B=256, M=8, N=16, K=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("B")


@device(chip=1)
def batched_small_bf16(ctx: Context,
                       a: HbmTensor[bf16, Chip, m("B, M, K")],
                       w: HbmTensor[bf16, Chip, m("B, N, K")]) -> HbmTensor[f32, Chip, m("B, M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M, K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8"), m("K"))
             .fetch_cast(bf16)
             .collect(m("N % 8, N / 8, K / 16"), m("K % 16"))
             .to_trf(m("N % 8"), m("N / 8, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M, N / 8"), m("K"))
           .fetch_cast(bf16)
           .collect(m("M, N / 8, K / 16"), m("K % 16"))
           .contract_outer(w_trf, m("M, N / 8, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M, N / 8"))
           .contract_lane(m("M, N / 8"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M, N")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("B, M, N")])
