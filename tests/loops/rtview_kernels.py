"""Kernels whose redistribution reads or writes a tile at a runtime start (a rolled loop's
index, or a launch value), and whose interleaved `begin` reads two tiles at different
starts, written rolled (`ctx.loop`) and unrolled (a Python `for`), for
tests/loops/test_loop_rtviews.py."""

from typing import Any

from npu_opt import *
from tests.loops.reader_kernels import Rows, _min_of

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


axes(RS=512, RT=4, RH=8, RI=2)   # reader_kernels' Rows and _min_of
RIn = HbmTensor[i32, m("1"), m("RS, RT, RH")]


def pair_min(loop: Any, lhs: Any, rhs: Any) -> Any:
    """out[:, t] = min(x[:, lhs(t)], y[:, rhs(t)]) for t in `loop(ctx)` (a `ctx.loop` or a
    Python range): an interleaved `begin` over a tile of x and a tile of y."""

    @device(chip=1)
    def min_of_tiles(ctx: Context, x: RIn, y: RIn) -> RIn:
        dx, dy = x.to_dm(ctx.tdma, Rows), y.to_dm(ctx.tdma, Rows)
        out = Rows.new()
        out.view_mut().memset(ctx.sub, 0)
        for t in loop(ctx):
            a = dx.view().tile(m("RT"), 1, m("RS % 8, 1 # 4, RH"), lhs(t))
            b = dy.view().tile(m("RT"), 1, m("RS % 8, 1 # 4, RH"), rhs(t))
            _min_of(ctx, a, b).view().to_dm_view(ctx.tdma, out.view_mut().tile(m("RT"), 1, m("RS % 8, 1 #{!} 4, RH"), t))
        return out.to_hbm(ctx.tdma, RIn)
    return min_of_tiles


@device(chip=1)
def pair_min_at_launch(ctx: Context, x: RIn, y: RIn, j: HbmScalar[usize], k: HbmScalar[usize]) -> HbmTensor[i32, m("1"), m("RS, RH")]:
    """min(x[:, j], y[:, k]): an interleaved `begin` over tiles at two launch values."""
    dx, dy = x.to_dm(ctx.tdma, Rows), y.to_dm(ctx.tdma, Rows)
    a = dx.view().tile(m("RT"), 1, m("RS % 8, 1 # 4, RH"), j.to_spm(ctx.tdma))
    b = dy.view().tile(m("RT"), 1, m("RS % 8, 1 # 4, RH"), k.to_spm(ctx.tdma))
    return _min_of(ctx, a, b).to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("RS, RH")])


axes(ZP=4, ZR=24, ZC=90, ZW=32, ZE=4)
ZCache = HbmTensor[bf16, m("1"), m("ZP, ZC, ZW")]


def scatter_pages(loop: Any, page: Any) -> Any:
    """Tile e of the updates scattered into page `page(e)` of the cache at the byte offsets
    of row e of the index, for e in `loop(ctx)`: a scatter writing into a tile (one page,
    its rows counted from the page's start) at a fixed or a runtime start."""

    @device(chip=1)
    def scatter_into_pages(ctx: Context, fresh: HbmTensor[bf16, m("1"), m("ZR, ZE, ZW")],
                           offsets: HbmTensor[i32, m("1"), m("ZE, ZR")], cache: Mut[ZCache]) -> None:
        d = fresh.to_dm(ctx.tdma, DmTensor[bf16, m("1"), m("1 # 2"), m("ZR # 64"), m("ZE, ZW")])
        for e in loop(ctx):
            row = offsets.view().tile(m("ZE"), 1, m("1 # 4, ZR"), e).to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("ZR")])
            tile = d.view().tile(m("ZE"), 1, m("1 # 4, ZW"), e)
            dst = cache.view_mut().tile(m("ZP"), 1, m("1 #{!} 4, ZC, ZW"), page(e))
            dst.scatter(m("ZC"), m("ZW")).by_byte_offsets(row).from_dm_view(ctx.tdma, tile)
    return scatter_into_pages


@device(chip=1)
def scatter_page_at_launch(ctx: Context, fresh: HbmTensor[bf16, m("1"), m("ZR, ZW")],
                           offsets: HbmTensor[i32, m("1"), m("ZR")], p: HbmScalar[usize], cache: Mut[ZCache]) -> None:
    """The updates scattered into page `p` of the cache (a launch value)."""
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, m("1"), m("1 # 2"), m("ZR # 64"), m("ZW")])
    dst = cache.view_mut().tile(m("ZP"), 1, m("1 #{!} 4, ZC, ZW"), p.to_spm(ctx.tdma))
    dst.scatter(m("ZC"), m("ZW")).by_byte_offsets(offsets).from_dm(ctx.tdma, d)
