"""Two-chip add (examples/topology/two_chip_add.py): out = x + y over two RNGD chips.

Each chip holds half of each operand (`Chip = m("C")`, host arrays (2, 2048)): 2 clusters
x 256 slices x 4 values of i32. `begin_interleaved` reads x and y as one stream along the
size-2 axis I, `vector_intra_slice_unzip` splits it into group 0 (x) and group 1 (y), and
`vector_clip_zip(ClipBinaryOpI32.ADD_FXP)` adds them with wrapping i32 arithmetic in one
Vector Engine pass. Compiled for `rngd`, a chip=2 kernel uses the shipped `rngd-2chip`
target.
"""

from npu_opt import *

axes(C=2, N=2048, I=2)

Cluster, Slice = m("N / 1024"), m("N / 4 % 256")


@device(chip=2)
def two_chip_add(ctx: Context, x: HbmTensor[i32, m("C"), m("N")],
                 y: HbmTensor[i32, m("C"), m("N")]) -> HbmTensor[i32, m("C"), m("N")]:
    xd = x.to_dm(ctx.tdma, DmTensor[i32, m("C"), Cluster, Slice, m("N % 4")])
    yd = y.to_dm(ctx.tdma, DmTensor[i32, m("C"), Cluster, Slice, m("N % 4")])
    out = (ctx.main.begin_interleaved(xd.view(), yd.view(), m("I"))
           .fetch(m("I"), m("N % 4"))                       # one x flit, then one y flit
           .collect(m("I"), m("N % 4 # 8"))
           .vector_init()
           .vector_intra_slice_unzip(m("I"), m("1"))
           .vector_clip_zip(ClipBinaryOpI32.ADD_FXP)        # group 0 + group 1, wrapping
           .vector_final()
           .commit_trim(m("N % 4"))
           .commit(m("N % 4")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, m("C"), m("N")])
