"""Fetch lifts (examples/fetch_lift.py): a fetch base per slice, then per chip, cluster and slice.

`lifted_widen`: the DMA writes each row `Q, V` of `x` into a pair of slices (the Slice
placement `A, 2` broadcasts it). A plain fetch would read all four `Q` on both slices;
`fetch_slice_lift` gives the second slice of each pair its own base (`Q = 2`, 64 bytes in),
so each slice reads two `Q` rows and the pair together holds the row once
(`A, Q / 2`). The Fetch Adapter then widens i8 to i32.

`every_dimension` (4 chips): the DM tensor is replicated over the chips, the two clusters
and the pairs of slices, and one read lifts `C` onto the chips, `L` onto the clusters and
`H` onto the slices; every position reads a different row from its own copy.
"""

from npu_opt import *

axes(A=128, Q=4, V=32)
axes(S=64, C=4, L=2, H=2, W=16)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def lifted_widen(ctx: Context, x: HbmTensor[i8, Chip, m("A, Q, V")]) -> HbmTensor[i32, Chip, m("A, Q, V")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A, 2"), m("Q, V")])  # each row on two slices
    y = (ctx.main.begin(d.view())
         .fetch(m("Q"), m("V"))                            # 4 steps of 32 bytes on every slice
         .fetch_slice_lift(m("A, Q / 2"), m("Q % 2"))      # the second slice of a pair starts at Q = 2
         .fetch_cast(i32)
         .collect(m("Q % 2, V / 8"), m("V % 8"))
         .commit_trim(m("V % 8"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, Q, V")])


@device(chip=4)
def every_dimension(ctx: Context, x: HbmTensor[bf16, m("4"), m("S, C, L, H, W")]
                    ) -> HbmTensor[bf16, m("C"), m("L, S, H, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, m("4"), m("2"), m("S, 2"), m("C, L, H, W")])  # replicated 4 x 2 x 2
    y = (ctx.main.begin(d.view())
         .fetch(m("C, L, H"), m("W"))
         .fetch_chip_lift(m("C"), m("L, H"))
         .fetch_cluster_lift(m("L"), m("H"))
         .fetch_slice_lift(m("S, H"), m("1"))
         .collect(m("1"), m("W"))
         .commit_trim(m("W"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[bf16, m("C"), m("L, S, H, W")])
