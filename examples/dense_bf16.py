"""A bf16 dense layer: Y = ReLU(A W^T + b), f32 result.

Y[m, n] = max(C[m, n] + b[n], 0) with C[m, n] = sum_k A[m, k] * W[n, k] in f32,
M = N = 512, K = 128. The contraction is examples/gemm_bf16.py's; the bias is stored in
the Vector Register File of every slice (each slice keeps the 32 bias values of its
output columns, `N % 32`) and added by the Clip cluster (`ClipBinaryOpF32.ADD` reading
the VRF), then ReLU is `ClipBinaryOpF32.MAX` with 0.0 in the same pass.
"""

from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def dense_bf16_kernel(ctx: Context,
                      a: HbmTensor[bf16, Chip, m("M, K")],
                      w: HbmTensor[bf16, Chip, m("N, K")],
                      b: HbmTensor[f32, Chip, m("N")]) -> HbmTensor[f32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 32, K")])
    b = b.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("N % 32")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .collect(m("N % 8, N / 8 % 4, K / 16"), m("K % 16"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    b_vrf = (ctx.sub.begin(b.view())
             .fetch(m("N / 8 % 4"), m("N % 8"))
             .collect(m("N / 8 % 4"), m("N % 8"))
             .to_vrf(m("N % 32")))                          # 32 f32 per slice
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .collect(m("M % 32, N / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .vector_init()
           .vector_intra_slice_tag(TagMode.ZERO)
           .vector_clip(ClipBinaryOpF32.ADD, b_vrf)         # + bias, read from the VRF
           .vector_clip(ClipBinaryOpF32.MAX, 0.0)           # ReLU
           .vector_final()
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("M, N")])
