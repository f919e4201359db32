"""A bf16 GEMM followed by ReLU6 in the Vector Engine, f32 result.

Y[m, n] = min(max(C[m, n], 0), 6) with C[m, n] = sum_k A[m, k] * W[n, k] in f32,
M = N = 512, K = 128: the contraction of examples/gemm_bf16.py, then the Vector Engine's
Clip cluster on the f32 stream (8-way, no float path needed): `Max` with 0.0, `Min` with 6.0.
"""

from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def gemm_bf16_relu_kernel(ctx: Context,
                          a: HbmTensor[bf16, Chip, m("M, K")],
                          w: HbmTensor[bf16, Chip, m("N, K")]) -> HbmTensor[f32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .collect(m("N % 8, N / 8 % 4, K / 16"), m("K % 16"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .collect(m("M % 32, N / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .vector_init()
           .vector_intra_slice_tag(TagMode.ZERO)
           .vector_clip(ClipBinaryOpF32.MAX, 0.0)               # ReLU
           .vector_clip(ClipBinaryOpF32.MIN, 6.0)               # ... capped at 6
           .vector_final()
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("M, N")])
