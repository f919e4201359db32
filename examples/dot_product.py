"""Dot product in bf16 (examples/dot_product.py): out = sum_a lhs[a] * rhs[a], A = 2048.

One slice and one lane do all the work. The right-hand side goes to the TRF through the
sub context; the main context streams the left-hand side in 64-byte packets (two flits),
the Packet Reducer sums each packet with an adjacent-pair tree, and the Time Reducer adds
the 64 packets in stream order. The f32 result is narrowed to bf16 by the Cast Engine.
"""

from npu_opt import *

axes(A=2048)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")          # one active slice

@device(chip=1)
def dot_product_kernel(ctx: Context,
                       lhs: HbmTensor[bf16, Chip, m("A")],
                       rhs: HbmTensor[bf16, Chip, m("A")]) -> HbmTensor[bf16, Chip, m("1")]:
    lhs = lhs.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A")])
    rhs = rhs.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("A")])
    rhs_trf = (ctx.sub.begin(rhs.view())
               .fetch(m("1"), m("A"))
               .collect(m("A / 16"), m("A % 16"))
               .to_trf(m("1"), m("A")))
    out = (ctx.main.begin(lhs.view())
           .fetch(m("1"), m("A"))
           .collect(m("A / 16"), m("A % 16"))
           .contract_outer(rhs_trf, m("A / 32"), m("A % 32"))   # pairs flits: 64-byte packets
           .contract_packet(m("1"))                              # tree over 32 products
           .contract_time(m("1"))                                # 64 time steps summed
           .contract_lane(m("1"), m("1 # 8"), LaneMode.INTERLEAVED)
           .cast(bf16, m("1 # 16"))
           .commit_trim(m("1 # 8"))
           .commit(m("1 # 8")))
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("1")])
