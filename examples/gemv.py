"""Matrix-vector product in bf16 (examples/gemv.py): y[i] = sum_j M[i, j] * v[j].

I = 256 rows, one per slice; J = 2048. The vector is broadcast to every slice by the DMA
(the DM layout has no I), loaded into each slice's TRF, and every slice contracts its row.
The result is committed with the smallest legal commit: 8 bytes, of which one bf16 is live.
"""

from npu_opt import *

axes(I=256, J=2048)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I")                 # one row per slice

@device(chip=1)
def gemv_kernel(ctx: Context,
                matrix: HbmTensor[bf16, Chip, m("I, J")],
                vector: HbmTensor[bf16, Chip, m("J")]) -> HbmTensor[bf16, Chip, m("I")]:
    matrix = matrix.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J")])
    vector = vector.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("J")])  # broadcast to every slice
    vector_trf = (ctx.sub.begin(vector.view())
                  .fetch(m("1"), m("J"))
                  .collect(m("J / 16"), m("J % 16"))
                  .to_trf(m("1"), m("J")))
    out = (ctx.main.begin(matrix.view())
           .fetch(m("J / 16"), m("J % 16"))
           .collect(m("J / 16"), m("J % 16"))
           .contract_outer(vector_trf, m("J / 32"), m("J % 32"))
           .contract_packet(m("1"))
           .contract_time(m("1"))
           .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("1 # 16"))
           .commit_trim(m("1 # 4"))                    # 8 bytes: the smallest commit
           .commit(m("1 # 4")))
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("I")])
