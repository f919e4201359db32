"""A packet that pads a group of three axes to one flit (the book's fetch-engine example of a
`[A, B, C] # 32` packet), read from a resident DM tensor: no DMA fills a 30-byte DM row."""

from npu_opt import *

axes(A3=3, B5=5, C2=2)
Grid = DmTensor[i8, m("1"), m("1 # 2"), m("1 # 256"), m("A3, B5, C2")]


@device(chip=1)
def group_packet(ctx: Context, d: Grid) -> HbmTensor[i8, m("1"), m("A3, B5, C2")]:
    out = (ctx.main.begin(d.view())
           .fetch(m("1"), m("[A3, B5, C2] # 32"))
           .collect(m("1"), m("[A3, B5, C2] # 32"))
           .commit_trim(m("[A3, B5, C2] # 32"))
           .commit(m("[A3, B5, C2] # 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[i8, m("1"), m("A3, B5, C2")])
