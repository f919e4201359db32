"""Kernels on one live chip of four (`Chip` `m("1 # 4")`): the data lives on chip 0 and
chips 1 to 3 hold padding (issue 56 item 2)."""

from npu_opt import *

axes(A=256, B=8)
OneOfFour = m("1 # 4")


@device(chip=4)
def one_chip_of_four_transpose(ctx: Context, x: HbmTensor[i32, OneOfFour, m("A, B")],
                               out: Mut[HbmTensor[i32, OneOfFour, m("A, B")]]) -> HbmTensor[i32, OneOfFour, m("B, A")]:
    """Returns x transposed and writes x itself into `out`."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, OneOfFour, m("1 # 2"), m("A"), m("B")])
    d.to_hbm(ctx.tdma, out)
    return d.to_hbm(ctx.tdma, HbmTensor[i32, OneOfFour, m("B, A")])
