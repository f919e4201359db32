"""Widening copy (examples/widening_copy.py): i8 in, i32 out, no contraction.

The Fetch Adapter widens every i8 to i32 (`fetch_cast(i32)`), so a 64-byte packet becomes
256 bytes, which collect splits into 8 flits. The result goes back to HBM transposed
(`B, A`): the DM -> HBM transfer has no alignment rule, so it can transpose freely.
"""

from npu_opt import *

axes(A=4096, B=8)

Chip = m("1")
Cluster = m("1 # 2")

@device(chip=1)
def fetch_commit_simple(ctx: Context,
                        x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i32, Chip, m("B, A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A / 16"), m("A / 8 % 2, A % 8, B")])
    y = (ctx.main.begin(x.view())
         .fetch(m("A / 8 % 2"), m("A % 8, B"))        # 64-byte i8 packets
         .fetch_cast(i32)                             # 256-byte packets
         .collect(m("A / 8 % 2, A % 8"), m("B"))      # 8 flits each
         .commit_trim(m("B"))
         .commit(m("A / 8 % 2, A % 8, B")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("B, A")])   # transposing DMA into HBM
