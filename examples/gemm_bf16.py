"""GEMM in bf16 with an f32 result (examples/gemm_bf16.py): the bf16 twin of example 4.

A flit holds 16 bf16, so the collects deliver `K % 16`; contract_outer packs two flits
into 64-byte `K % 32` packets and walks `K / 32` in time. The f32 accumulator values are
committed as they are, without narrowing.
"""

from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def gemm_bf16_kernel(ctx: Context,
                     a: HbmTensor[bf16, Chip, m("M, K")],
                     w: HbmTensor[bf16, Chip, m("N, K")]) -> HbmTensor[f32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(bf16)                                 # identity: accepted, no conversion
             .collect(m("N % 8, N / 8 % 4, K / 16"), m("K % 16"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(bf16)
           .collect(m("M % 32, N / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))                            # 8 x f32 = 32 bytes, no trim
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("M, N")])
