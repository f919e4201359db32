"""A batched bf16 GEMM without broadcast rows (issue 38.3): one independent 32 x 32 x 512
problem per slice, 256 slices, the same 2^27 products as the 512^3 GEMM of kernels_512.py.

Each slice reads its own rows of `a` and of `w` (no DMA broadcast: no two slices hold
copies), so no row is shared across slices. `npu-opt check benchmarks/kernels_batched.py` passes.
"""

from __future__ import annotations

from npu_opt import *

axes(B=256, M=32, N=32, K=512)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("B")


@device(chip=1)
def gemm_bf16_batched_kernel(ctx: Context,
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
