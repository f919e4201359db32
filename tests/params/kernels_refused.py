"""A kernel the DMA rules refuse: a dense source row copied into a padded DM row whose
live run is not a whole number of 8-byte DM write units."""

from npu_opt import *

axes(A=64, P=5)

Chip = m("1")
Cluster = m("1 # 2")
DENSE_LINE = 15  # the line of the to_dm call below


@device(chip=1)
def dense_into_padded_tail(ctx: Context, x: HbmTensor[i8, Chip, m("A, P")]) -> HbmTensor[i8, Chip, m("A, P")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A / 4 # 64"), m("A % 4, P # 8")])
    return d.to_hbm(ctx.tdma)
