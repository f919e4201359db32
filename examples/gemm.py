"""GEMM in bf16 (examples.md example 3): C[i, j] = sum_k A[i, k] * B[j, k].

I = J = 512, K = 64. Each of the 256 slices owns a 32 x 32 tile of C. This is the
kernel of api.md verbatim, and it relies on the defaults of `to_trf()`, `commit()`
and `to_hbm()` (pipeline.md 3.2).
"""

from npu_opt import *

axes(I=512, J=512, K=64)

Chip = m("1")
Cluster = m("1 # 2")              # one live cluster, one padding cluster
Slice = m("I / 32, J / 32")       # 16 x 16 tiles of 32 x 32
Lane = m("J % 8")


@device(chip=1)
def gemm_kernel(ctx: Context,
                a: HbmTensor[bf16, Chip, m("I, K")],
                b: HbmTensor[bf16, Chip, m("J, K")]) -> HbmTensor[bf16, Chip, m("I, J")]:
    # Each slice gets its 32 rows of a and of b (a is replicated over the J / 32 slices).
    a = a.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("I % 32, K")])
    b = b.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J % 32, K")])
    # The sub context loads b into the TRF: lane J % 8 (inferred), element J / 8 % 4, K.
    b_trf = (ctx.sub.begin(b.view())
             .fetch(m("J % 8, J / 8 % 4"), m("K"))
             .collect(m("J % 8, J / 8 % 4, K / 16"), m("K % 16"))
             .to_trf())
    # The main context streams a against the TRF: 64-byte packets (two flits) of K % 32.
    out = (ctx.main.begin(a.view())
           .fetch(m("I % 32, J / 8 % 4"), m("K"))
           .collect(m("I % 32, J / 8 % 4, K / 16"), m("K % 16"))
           .contract_outer(b_trf, m("I % 32, J / 8 % 4, K / 32"), m("K % 32"))
           .contract_packet(m("1"))                     # adjacent-pair tree over 32 products
           .contract_time(m("I % 32, J / 8 % 4"))       # K / 32 summed in time
           .contract_lane(m("I % 32, J / 8 % 4"), m("J % 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("J % 8 # 16"))                 # f32 -> bf16, packet padded to a flit
           .commit_trim(m("J % 8"))                     # write only the 8 live values
           .commit())
    return out.to_hbm(ctx.tdma)
