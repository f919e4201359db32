"""GEMM in bf16 (examples/gemm.py): C[i, j] = sum_k A[i, k] * B[j, k].

I = J = 512, K = 64. Each of the 256 slices owns a 32 x 32 tile of C. This is the
kernel of docs/reference/python-api.md verbatim, and it relies on the defaults of `to_trf()`, `commit()`
and `to_hbm()` (docs/porting.md): lane `J % 8`, element `J / 8 % 4, K`; the committed
tile `I % 32, J % 32`; and the HBM result `I, J`.
"""

from npu_opt import *

axes(I=512, J=512, K=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I / 32, J / 32")
Lane = m("J % 8")

@device(chip=1)
def gemm_kernel(ctx: Context,
                a: HbmTensor[bf16, Chip, m("I, K")],
                b: HbmTensor[bf16, Chip, m("J, K")]) -> HbmTensor[bf16, Chip, m("I, J")]:
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("I % 32, K")])
    b = b.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J % 32, K")])
    b_trf = (ctx.sub.begin(b.view())
             .fetch(m("J % 8, J / 8 % 4"), m("K"))
             .collect(m("J % 8, J / 8 % 4, K / 16"), m("K % 16"))
             .to_trf())
    out = (ctx.main.begin(a.view())
           .fetch(m("I % 32, J / 8 % 4"), m("K"))
           .collect(m("I % 32, J / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(b_trf, m("I % 32, J / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))
           .contract_time(m("I % 32, J / 8 % 4"))
           .contract_lane(m("I % 32, J / 8 % 4"), m("J % 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("J % 8 # 16"))
           .commit_trim(m("J % 8"))
           .commit())
    return out.to_hbm(ctx.tdma)
