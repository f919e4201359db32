"""The benchmarks' 512 x 512 x 512 GEMMs: examples 4 and 4b of examples/ with K = 512.

The kernel text is the examples' own, only `K` grows from 128 to 512. The stage mappings
stay legal: the TRF element `N / 8 % 4, K` holds 4 x 512 i8 = 2 KiB per lane (16 KiB per
slice) or 4 x 512 bf16 = 4 KiB per lane (32 KiB per slice); each slice's DM holds
32 x 512 elements of `a` and of `w` (16 KiB each in i8, 32 KiB in bf16) plus the
4 KiB result tile; `K / 64` (i8, 8 steps) and `K / 32` (bf16, 16 steps) are summed in
time; the i32 accumulator's worst case is 512 x 2^14 = 2^23, far from wrapping.
`npu-opt check benchmarks/kernels_512.py` passes both.
"""

from __future__ import annotations

from npu_opt import *

axes(M=512, N=512, K=512)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")


@device(chip=1)
def gemm_i8_512_kernel(ctx: Context,
                       a: HbmTensor[i8, Chip, m("M, K")],
                       w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(i8)
             .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(i8)
           .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])


@device(chip=1)
def gemm_bf16_512_kernel(ctx: Context,
                         a: HbmTensor[bf16, Chip, m("M, K")],
                         w: HbmTensor[bf16, Chip, m("N, K")]) -> HbmTensor[f32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(bf16)
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
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("M, N")])
