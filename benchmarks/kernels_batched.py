"""Batched GEMMs with one independent 32 x 32 x 512 problem per slice (no broadcast rows).

The GEMMs of benchmarks/kernels_512.py give every slice a 32-row block of `a` that 15 other
slices also hold (the slices of one `M / 32` share it) and a 32-row block of `w` shared
along `N / 32`; a backend may compute such a row once. Here slice `B` holds its own
problem C[b] = A[b] @ W[b]^T with M = N = 32, K = 512: 256 x 32 x 32 x 512 = 2^27
products, as many as a 512^3 GEMM, and no two slices hold the same data. The pipelines
are those of the 512^3 kernels with `M % 32` and `N % 32` read as `M` and `N`: per slice
32 x 512 elements of `a` and of `w` in DM, the TRF element `N / 8 % 4, K`, `K / 64` (i8)
or `K / 32` (bf16) steps summed in time.
"""

from __future__ import annotations

from npu_opt import *

axes(B=256, M=32, N=32, K=512)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("B")


@device(chip=1)
def batched_i8_kernel(ctx: Context,
                      a: HbmTensor[i8, Chip, m("B, M, K")],
                      w: HbmTensor[i8, Chip, m("B, N, K")]) -> HbmTensor[i32, Chip, m("B, M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8"), m("K"))
             .fetch_cast(i8)
             .collect(m("N % 8, N / 8, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M, N / 8"), m("K"))
           .fetch_cast(i8)
           .collect(m("M, N / 8, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M, N / 8, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M, N / 8"))
           .contract_lane(m("M, N / 8"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M, N")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("B, M, N")])


@device(chip=1)
def batched_bf16_kernel(ctx: Context,
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
