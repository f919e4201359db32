"""Features tried inside a rolled loop (tests/loops/test_loop_features.py), each written rolled
(`ctx.loop`) and unrolled (a Python `for`): padded TRF rows, a tensor on one padded chip of
four, and guards in a runtime-bounded loop writing views at the index."""

from typing import Any

from npu_opt import *

axes(FN=64, FK=16, FO=2, FP=4, FA=256, FB=8, FQ=4, FE=4, FW=8, FR=64)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")


def padded_rows(rolled: bool) -> Any:
    """out[p] = x @ w[p].T for each of FP weight pages, each page's two rows staged as padded
    32-byte TRF rows (`FK # 32`) in a loop over the pages, committed into page p's tile."""

    @device(chip=1)
    def pages(ctx: Context, x: HbmTensor[i8, Chip, m("FN, FK")],
              w: HbmTensor[i8, Chip, m("FP, FO, FK")]) -> HbmTensor[i32, Chip, m("FP, FN, FO")]:
        xd = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("FN, FK")])
        wd = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("FP, FO, FK")])
        out = DmTensor[i32, Chip, Cluster, Slice, m("FP, FN / 4, FO, FN % 4")].new()
        for p in (ctx.loop(4) if rolled else range(4)):
            page = wd.view().tile(m("FP"), 1, m("1 # 4, FO, FK"), p)
            w_trf = (ctx.sub.begin(page).fetch(m("FO"), m("FK")).collect(m("FO"), m("FK # 32"))
                     .to_trf(m("1"), m("FO, FK # 32")))
            (ctx.main.begin(xd.view()).fetch(m("FN / 2"), m("FN % 2, FK")).collect(m("FN / 2"), m("FN % 2, FK"))
             .contract_outer(w_trf, m("FN / 4, FO"), m("FN % 4, FK"))
             .contract_packet(m("FN % 4"))
             .contract_time(m("FN / 4, FO"))
             .contract_lane(m("FN / 4, FO"), m("FN % 4 # 8"), LaneMode.SEQUENTIAL)
             .commit_trim(m("FN % 4"))
             .commit_view(out.view_mut().tile(m("FP"), 1, m("1 #{!} 4, FN / 4, FO, FN % 4"), p)))
        return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("FP, FN, FO")])
    return pages


OneOfFour = m("1 # 4")


def one_chip_of_four(rolled: bool) -> Any:
    """Pages of x in reverse order, on one live chip of four (`m("1 # 4")`): the host array
    has the element's shape."""

    @device(chip=4)
    def reverse(ctx: Context, x: HbmTensor[i32, OneOfFour, m("FQ, FA, FB")]) -> HbmTensor[i32, OneOfFour, m("FQ, FA, FB")]:
        out = HbmTensor[i32, OneOfFour, m("FQ, FA, FB")].new()
        for q in (ctx.loop(4) if rolled else range(4)):
            page = x.view().tile(m("FQ"), 1, m("1 # 4, FA, FB"), 3 - q)
            d = page.to_dm(ctx.tdma, DmTensor[i32, OneOfFour, m("1 # 2"), m("FA"), m("FB")])
            d.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("FQ"), 1, m("1 #{!} 4, FA, FB"), q))
        return out
    return reverse


Groups = DmTensor[i32, Chip, Cluster, m("FR"), m("FE, FW")]


def _guarded_group(ctx: Context, d: Any, out: Any, keep: Any, i: Any) -> None:
    """Group i of out: group 3 - i of d when i < keep, else -1 (two guards writing one tile,
    one by `commit_view`, one by `memset`)."""
    dst = out.view_mut().tile(m("FE"), 1, m("1 #{!} 4, FW"), i)
    with ctx.when(keep > i):
        (ctx.main.begin(d.view().tile(m("FE"), 1, m("1 # 4, FW"), 3 - i))
         .fetch(m("1"), m("FW")).collect(m("1"), m("FW"))
         .commit_trim(m("FW")).commit_view(dst))
    with ctx.when(keep <= i):
        dst.memset(ctx.sub, -1)


def guarded_writes(rolled: bool) -> Any:
    """For i < n (a runtime bound, at most 4) group i as `_guarded_group` writes it; the
    groups from n on are 0. Unrolled: four iterations, each guarded by `i < n`."""

    @device(chip=1)
    def guarded(ctx: Context, x: HbmTensor[i32, Chip, m("FR, FE, FW")], n: HbmScalar[u32],
                k: HbmScalar[u32]) -> HbmTensor[i32, Chip, m("FR, FE, FW")]:
        d = x.to_dm(ctx.tdma, Groups)
        out = Groups.new()
        keep = k.to_spm(ctx.tdma).cast(usize)
        if rolled:
            for i in ctx.loop(n):
                _guarded_group(ctx, d, out, keep, i)
        else:
            count = n.to_spm(ctx.tdma).cast(usize)
            for i in range(4):
                with ctx.when(count > i):
                    _guarded_group(ctx, d, out, keep, i)
        return out.to_hbm(ctx.tdma)
    return guarded


def addressed_pages(rolled: bool, at: bool) -> Any:
    """`padded_rows` with each page moved to DM inside the loop and the `_at` forms in the body
    (`to_dm_at`, `to_trf_at` with a TRF half, `commit_at`) or their address-free twins; each
    page's result is copied into page p's tile of the output."""

    @device(chip=1)
    def pages_at(ctx: Context, x: HbmTensor[i8, Chip, m("FN, FK")],
                 w: HbmTensor[i8, Chip, m("FP, FO, FK")]) -> HbmTensor[i32, Chip, m("FP, FN, FO")]:
        xd = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("FN, FK")])
        out = DmTensor[i32, Chip, Cluster, Slice, m("FP, FN / 4, FO, FN % 4")].new()
        page_t = DmTensor[i8, Chip, Cluster, Slice, m("FO, FK")]
        for p in (ctx.loop(4) if rolled else range(4)):
            page = w.view().tile(m("FP"), 1, m("1 # 4, FO, FK"), p)
            pd = page.to_dm_at(ctx.tdma, page_t, 512) if at else page.to_dm(ctx.tdma, page_t)
            rows = ctx.sub.begin(pd.view()).fetch(m("FO"), m("FK")).collect(m("FO"), m("FK # 32"))
            w_trf = (rows.to_trf_at(m("1"), m("FO, FK # 32"), TrfAddress.FIRST_HALF) if at
                     else rows.to_trf(m("1"), m("FO, FK # 32")))
            y = (ctx.main.begin(xd.view()).fetch(m("FN / 2"), m("FN % 2, FK")).collect(m("FN / 2"), m("FN % 2, FK"))
                 .contract_outer(w_trf, m("FN / 4, FO"), m("FN % 4, FK"))
                 .contract_packet(m("FN % 4"))
                 .contract_time(m("FN / 4, FO"))
                 .contract_lane(m("FN / 4, FO"), m("FN % 4 # 8"), LaneMode.SEQUENTIAL)
                 .commit_trim(m("FN % 4")))
            tile = y.commit_at(m("FN / 4, FO, FN % 4"), 4096) if at else y.commit(m("FN / 4, FO, FN % 4"))
            (ctx.sub.begin(tile.view()).fetch(m("FN / 4, FO"), m("FN % 4")).collect(m("FN / 4, FO"), m("FN % 4 # 8"))
             .commit_trim(m("FN % 4"))
             .commit_view(out.view_mut().tile(m("FP"), 1, m("1 #{!} 4, FN / 4, FO, FN % 4"), p)))
        return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("FP, FN, FO")])
    return pages_at
