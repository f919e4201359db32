"""A kernel of the schedule page's tests: two loads into the same DM bytes, each stored into
the caller's in-out tensor `out` by a `dma_into` (the second writes into the first's result)."""

from npu_opt import *

axes(A=64, B=8)
Chip = m("1")
RowsDm = DmTensor[i8, Chip, m("1 # 2"), m("A / 4 # 64"), m("A % 4, B")]


@device(chip=1)
def twice_into(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")], y: HbmTensor[i8, Chip, m("A, B")],
               out: Mut[HbmTensor[i8, Chip, m("A, B")]]) -> None:
    x.to_dm(ctx.tdma, RowsDm).view().to_hbm_view(ctx.tdma, out.view_mut())
    y.to_dm(ctx.tdma, RowsDm).view().to_hbm_view(ctx.tdma, out.view_mut())
