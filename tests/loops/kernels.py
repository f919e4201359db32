"""Kernels written twice: with a rolled loop (`ctx.loop`) and with a Python `for` (unrolled),
for tests/loops. Each pair computes the same thing."""


from typing import Any

from npu_opt import *

T = 3                             # tiles of each loop
axes(LP=8, LA=64, LB=32, LM=512 * T, LN=512, LK=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("LM % 512 / 32, LN / 32")


def _page_copy(ctx: Context, x: Any, out: Any, i: Any) -> None:
    """Page i of x into page i of out, through DM."""
    page = x.view().tile(m("LP"), 1, m("1 # 8, LA, LB"), i)
    d = page.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("LA"), m("LB")])
    d.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("LP"), 1, m("1 #{!} 8, LA, LB"), i))


def _copy_pages(ctx: Context, x: Any, out: Any) -> None:
    """A helper holding a rolled loop."""
    for i in ctx.loop(8):
        _page_copy(ctx, x, out, i)


@device(chip=1)
def copy_rolled(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
    out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
    _copy_pages(ctx, x, out)
    return out


@device(chip=1)
def copy_unrolled(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
    out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
    for i in range(8):
        _page_copy(ctx, x, out, i)
    return out


@device(chip=1)
def copy_shifted(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
    """Pages 1, 3, 5, 7 of x into pages 0 .. 3 of out (a start `2 * i + 1`), the rest zero."""
    out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
    for i in ctx.loop(4):
        page = x.view().tile(m("LP"), 1, m("1 # 8, LA, LB"), 2 * i + 1)
        d = page.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("LA"), m("LB")])
        d.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("LP"), 1, m("1 #{!} 8, LA, LB"), i))
    return out


@device(chip=1)
def copy_first(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")],
               n: HbmScalar[u32]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
    """Pages 0 .. n-1 of x, the rest zero: a loop to 8 whose body is guarded by `i < n`."""
    out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
    count = n.to_spm(ctx.tdma).cast(usize)
    for i in ctx.loop(8):
        with ctx.when(i < count):
            _page_copy(ctx, x, out, i)
    return out


@device(chip=1)
def copy_bounded(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")],
                 n: HbmScalar[u32]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
    """Pages 0 .. n-1 of x, the rest zero: a loop whose bound is the launch value n."""
    out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
    for i in ctx.loop(n):
        _page_copy(ctx, x, out, i)
    return out


def _gemm_tile(ctx: Context, a: Any, w_trf: Any, out: Any, i: Any, dt: Any, acc: Any) -> None:
    """Row block i of out = row block i of a . w (w_trf holds w in the TRF)."""
    rows = a.view().tile(m("LM / 512"), 1, m(f"1 # {T}, LM % 512, LK"), i)
    a_dm = rows.to_dm(ctx.tdma, DmTensor[dt, Chip, Cluster, Slice, m("LM % 32, LK")])
    flit, pack = (32, 64) if dt is i8 else (16, 32)
    tile = ctx.main.begin(a_dm.view()).fetch(m("LM % 32, LN / 8 % 4"), m("LK"))
    if dt is i8:
        tile = tile.fetch_cast(i8)
    tile = (tile.collect(m(f"LM % 32, LN / 8 % 4, LK / {flit}"), m(f"LK % {flit}"))
            .contract_outer(w_trf, m(f"LM % 32, LN / 8 % 4, LK / {pack}"), m(f"LK % {pack}"))
            .contract_packet(m("1"))
            .contract_time(m("LM % 32, LN / 8 % 4"))
            .contract_lane(m("LM % 32, LN / 8 % 4"), m("LN % 8"), LaneMode.INTERLEAVED)
            .commit_trim(m("LN % 8"))
            .commit(m("LM % 32, LN % 32")))
    dst = out.view_mut().tile(m("LM / 512"), 1, m(f"1 #{{!}} {T}, LM % 512, LN"), i)
    tile.view().to_hbm_view(ctx.tdma, dst)


def _weights(ctx: Context, w: Any, dt: Any) -> Any:
    w_dm = w.to_dm(ctx.tdma, DmTensor[dt, Chip, Cluster, Slice, m("LN % 32, LK")])
    s = ctx.sub.begin(w_dm.view()).fetch(m("LN % 8, LN / 8 % 4"), m("LK"))
    if dt is i8:
        return (s.fetch_cast(i8).collect(m("LN % 8, LN / 8 % 4, LK / 32"), m("LK % 32"))
                .to_trf(m("LN % 8"), m("LN / 8 % 4, LK")))
    return s.collect(m("LN % 8, LN / 8 % 4, LK / 16"), m("LK % 16")).to_trf(m("LN % 8"), m("LN / 8 % 4, LK"))


def _gemm(rolled: bool, dt: Any, acc: Any) -> Any:
    def gemm(ctx: Context, a: HbmTensor[dt, Chip, m("LM, LK")], w: HbmTensor[dt, Chip, m("LN, LK")],
             out: Mut[HbmTensor[acc, Chip, m("LM, LN")]]) -> None:
        w_trf = _weights(ctx, w, dt)
        for i in (ctx.loop(T) if rolled else range(T)):
            _gemm_tile(ctx, a, w_trf, out, i, dt, acc)
    gemm.__name__ = gemm.__qualname__ = f"gemm_{dt.name}_{'rolled' if rolled else 'unrolled'}"
    return device(chip=1)(gemm)


gemm_i8_rolled, gemm_i8_unrolled = _gemm(True, i8, i32), _gemm(False, i8, i32)
gemm_bf16_rolled, gemm_bf16_unrolled = _gemm(True, bf16, f32), _gemm(False, bf16, f32)


@device(chip=1)
def copy_through_dm(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
    """x through a DM tensor made before the loop and read by every iteration, while each
    iteration makes two DM tensors after its read: the outer one must stay where it is."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("LA"), m("LP, LB")])
    out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
    for i in ctx.loop(8):
        e = d.view().tile(m("LP"), 1, m("1 # 8, LB"), i).to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("LA"), m("LB")])
        f = e.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("LA"), m("LB")])
        g = f.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("LA"), m("LB")])
        g.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("LP"), 1, m("1 #{!} 8, LA, LB"), i))
    return out


@device(chip=1)
def copy_nested(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")],
                n: HbmScalar[u32]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
    """Nested loops: group i of 4 pages goes to DM once (a buffer of the outer body, read by
    every inner iteration); page j of the group lands at page 4i + 3 - j of out when
    4i + j < n (a guard on both indices), else stays zero."""
    out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
    count = n.to_spm(ctx.tdma).cast(usize)
    for i in ctx.loop(2):
        group = x.view().tile(m("LP"), 4, m("LP = 4 # 8, LA, LB"), 4 * i).to_dm(
            ctx.tdma, DmTensor[i8, Chip, Cluster, m("LA"), m("LP = 4, LB")])
        for j in ctx.loop(4):
            with ctx.when(4 * i + j < count):
                page = group.view().tile(m("LP = 4"), 1, m("1 # 4, LB"), j).to_dm(
                    ctx.tdma, DmTensor[i8, Chip, Cluster, m("LA"), m("LB")])
                dst = out.view_mut().tile(m("LP"), 1, m("1 #{!} 8, LA, LB"), 4 * i + 3 - j)
                page.view().to_hbm_view(ctx.tdma, dst)
    return out


def copy_pages(trips: int) -> Any:
    """The first `trips` pages of x through DM, in a rolled loop (the rest of out stays zero)."""
    def copy(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
        out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
        for i in ctx.loop(trips):
            _page_copy(ctx, x, out, i)
        return out
    copy.__name__ = copy.__qualname__ = f"copy_{trips}_pages"
    return device(chip=1)(copy)


@device(chip=1)
def copy_bounded_skip_2(ctx: Context, x: HbmTensor[i8, Chip, m("LP, LA, LB")],
                        n: HbmScalar[u32]) -> HbmTensor[i8, Chip, m("LP, LA, LB")]:
    """Pages 0 .. n-1 of x but page 2: a runtime-bounded loop holding a guard."""
    out = HbmTensor[i8, Chip, m("LP, LA, LB")].new()
    for i in ctx.loop(n):
        with ctx.when(i != 2):
            _page_copy(ctx, x, out, i)
    return out
