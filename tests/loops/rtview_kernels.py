"""Kernels whose redistribution reads or writes a tile at a runtime start (a rolled loop's
index, or a launch value), and whose interleaved `begin` reads two tiles at different
starts, written rolled (`ctx.loop`) and unrolled (a Python `for`), for
tests/loops/test_loop_rtviews.py."""

from typing import Any

from npu_opt import *

axes(XK=2, XG=2, XR=8, XS=4, XW=8)
XChip, XCluster = m("XK"), m("XG")
XFull = DmTensor[i32, XChip, XCluster, m("XR # 64"), m("XS, XW")]
XRow = DmTensor[i32, XChip, XCluster, m("XR # 64"), m("XW")]
XIn = HbmTensor[i32, XChip, m("XG, XR, XS, XW")]


def swapped_rows(rolled: bool, write: bool = False, shift: int = 0) -> Any:
    """Row s of the tensor (its XS position) of every (chip, cluster) moved to the other
    chip and the other cluster, for each s: a redistribution reading the tile at the loop
    index (`write`: also writing row 3 - s of the result in the same record)."""

    @device(chip=2)
    def swap_rows(ctx: Context, x: XIn) -> XIn:
        d = x.to_dm(ctx.tdma, XFull)
        out = XFull.new()
        for s in (ctx.loop(4) if rolled else range(4)):
            plan = d.view().tile(m("XS"), 1, m("1 # 4, XW"), s + shift).chip_shuffle([1, 0]).cluster_swap()
            if write:
                plan.to_dm_view(ctx.tdma, out.view_mut().tile(m("XS"), 1, m("1 #{!} 4, XW"), 3 - s))
            else:
                row = plan.to_dm(ctx.tdma, XRow)
                row.view().to_dm_view(ctx.tdma, out.view_mut().tile(m("XS"), 1, m("1 #{!} 4, XW"), s))
        return out.to_hbm(ctx.tdma, XIn)
    return swap_rows


@device(chip=2)
def swap_row_at_launch(ctx: Context, x: XIn, src: HbmScalar[usize], dst: HbmScalar[usize]) -> XIn:
    """Row `src` of every (chip, cluster), swapped across chips and clusters, into row `dst`
    of a copy of x: a redistribution reading and writing tiles at launch values."""
    d = x.to_dm(ctx.tdma, XFull)
    out = x.to_dm(ctx.tdma, XFull)
    tile = d.view().tile(m("XS"), 1, m("1 # 4, XW"), src.to_spm(ctx.tdma))
    tile.chip_shuffle([1, 0]).cluster_swap().to_dm_view(
        ctx.tdma, out.view_mut().tile(m("XS"), 1, m("1 #{!} 4, XW"), dst.to_spm(ctx.tdma)))
    return out.to_hbm(ctx.tdma, XIn)
