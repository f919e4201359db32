"""GEMM with i8 operands, then requantization and ReLU in the Vector Engine, i8 result.

Q[m, n] = min(max(round(C[m, n] * 2**-6), 0), 127) with C[m, n] = sum_k A[m, k] * W[n, k],
M = N = 512, K = 64. The contraction leaves i32 sums in the stream; the Vector Engine
multiplies them by the Q31 constant 2**25 (1/64, `MulFxp` rounds half up), clips at 0
(ReLU) and 127, and the Cast Engine narrows the result to i8 (exact: it is in range).
"""

from npu_opt import *

axes(M=512, N=512, K=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def gemm_i8_requant_kernel(ctx: Context,
                           a: HbmTensor[i8, Chip, m("M, K")],
                           w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i8, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .vector_init()
           .vector_intra_slice_tag(TagMode.ZERO)
           .vector_fxp(FxpBinaryOp.MUL_FXP, 2**25)              # x / 64, rounded half up
           .vector_clip(ClipBinaryOpI32.MAX, 0)                 # ReLU
           .vector_clip(ClipBinaryOpI32.MIN, 127)
           .vector_final()
           .cast(i8, m("N % 8 # 32"))
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("M, N")])
