"""Matrix-vector product in bf16 whose vector reaches every slice through the Switch Engine.

y[i] = sum_j M[i, j] * v[j], with I = 256 rows (one per slice) and J = 4096. Unlike
examples/gemv.py, where a DMA copies the whole vector into every slice, the vector is
stored once, spread over the slices: slice s holds the 16 elements v[16 s : 16 s + 16]
(one 32-byte flit). The sub context fetches each slice's flit and the switch broadcasts
them around the ring with BROADCAST1(slice1=256, slice0=1): the input Slice `J / 16`
moves into Time, and every slice receives all 256 packets in ring order, so each slice
streams the whole vector (`J / 16` steps of `J % 16`). The new axis `I` names the copies:
the switched stream, and the TRF it is loaded into, live on Slice `I`, the matrix rows'
slices. Each slice then contracts its row with the vector, as in examples/gemv.py.
"""

from npu_opt import *

axes(I=256, J=4096)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def gemv_switch_kernel(ctx: Context,
                       matrix: HbmTensor[bf16, Chip, m("I, J")],
                       vector: HbmTensor[bf16, Chip, m("J")]) -> HbmTensor[bf16, Chip, m("I")]:
    matrix = matrix.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("I"), m("J")])
    vector = vector.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("J / 16"), m("J % 16")])  # spread, not copied
    vector_trf = (ctx.sub.begin(vector.view())
                  .fetch(m("1"), m("J % 16"))
                  .switch(m("I"), m("J / 16"), SwitchConfig.BROADCAST1(slice1=256, slice0=1))
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
