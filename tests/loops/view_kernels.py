"""Kernels whose views take a runtime start from a rolled loop's index, written rolled
(`ctx.loop`) and unrolled (a Python `for`), for tests/loops/test_loop_views.py."""

from typing import Any

from npu_opt import *

axes(VA=64, VE=4, VW=8, VM=4, VN=2, VR=16, VC=8)
Chip, Cluster = m("1"), m("1 # 2")
Groups = DmTensor[i32, Chip, Cluster, m("VA"), m("VE, VW")]


def _commit_group(ctx: Context, d: Any, out: Any, src: Any, dst: Any) -> None:
    """Group `src` of d committed into group `dst` of out by a MAIN stream."""
    (ctx.main.begin(d.view().tile(m("VE"), 1, m("1 # 4, VW"), src))
     .fetch(m("1"), m("VW")).collect(m("1"), m("VW"))
     .commit_trim(m("VW")).commit_view(out.view_mut().tile(m("VE"), 1, m("1 #{!} 4, VW"), dst)))


def commit_reversed(rolled: bool) -> Any:
    """out's group g is x's group 3 - g: `commit_view` into a tile at the loop index."""

    @device(chip=1)
    def reverse(ctx: Context, x: HbmTensor[i32, Chip, m("VA, VE, VW")]) -> HbmTensor[i32, Chip, m("VA, VE, VW")]:
        d = x.to_dm(ctx.tdma, Groups)
        out = Groups.new()
        for g in (ctx.loop(4) if rolled else range(4)):
            _commit_group(ctx, d, out, 3 - g, g)
        return out.to_hbm(ctx.tdma)
    return reverse


@device(chip=1)
def commit_past_the_end(ctx: Context, x: HbmTensor[i32, Chip, m("VA, VE, VW")]) -> HbmTensor[i32, Chip, m("VA, VE, VW")]:
    """The tile start g + 1 is 4 at g = 3, past the last start 3: LOOP-1."""
    d = x.to_dm(ctx.tdma, Groups)
    out = Groups.new()
    for g in ctx.loop(4):
        _commit_group(ctx, d, out, g, g + 1)
    return out.to_hbm(ctx.tdma)


# --- two runtime starts: nested loops over the tiles of both axes -------------------------

axes(TR=4, TC=2, TA=64, TK=32)
Block = DmTensor[i8, Chip, Cluster, m("TA"), m("TK")]


def _block_copy(ctx: Context, x: Any, out: Any, r: Any, c: Any, sr: Any, sc: Any) -> None:
    """Block (sr, sc) of x into block (r, c) of out, through DM."""
    src = x.view().tile(m("TR"), 1, m("1 # 4, TC, TA, TK"), sr).tile(m("TC"), 1, m("1 # 4, 1 # 2, TA, TK"), sc)
    d = src.to_dm(ctx.tdma, Block)
    dst = out.view_mut().tile(m("TR"), 1, m("1 #{!} 4, TC, TA, TK"), r) \
        .tile(m("TC"), 1, m("1 #{!} 4, 1 #{!} 2, TA, TK"), c)
    d.view().to_hbm_view(ctx.tdma, dst)


def blocks_transposed(rolled: bool) -> Any:
    """out block (r, c) = x block (3 - r, 1 - c): both tile starts of each view at runtime."""

    @device(chip=1)
    def flip(ctx: Context, x: HbmTensor[i8, Chip, m("TR, TC, TA, TK")]) -> HbmTensor[i8, Chip, m("TR, TC, TA, TK")]:
        out = HbmTensor[i8, Chip, m("TR, TC, TA, TK")].new()
        for r in (ctx.loop(4) if rolled else range(4)):
            for c in (ctx.loop(2) if rolled else range(2)):
                _block_copy(ctx, x, out, r, c, 3 - r, 1 - c)
        return out
    return flip


@device(chip=1)
def block_past_the_end(ctx: Context, x: HbmTensor[i8, Chip, m("TR, TC, TA, TK")]) -> HbmTensor[i8, Chip, m("TR, TC, TA, TK")]:
    """The column start c + 1 is 2 at c = 1, past the last start 1: LOOP-1."""
    out = HbmTensor[i8, Chip, m("TR, TC, TA, TK")].new()
    for r in ctx.loop(4):
        for c in ctx.loop(2):
            _block_copy(ctx, x, out, r, c, r, c + 1)
    return out


@device(chip=1)
def block_at_launch_rows(ctx: Context, x: HbmTensor[i8, Chip, m("TR, TC, TA, TK")],
                         n: HbmScalar[u32]) -> HbmTensor[i8, Chip, m("TR, TC, TA, TK")]:
    """A launch value as one of the two starts: not provable while tracing, LOOP-7."""
    out = HbmTensor[i8, Chip, m("TR, TC, TA, TK")].new()
    row = n.to_spm(ctx.tdma).cast(usize)
    for c in ctx.loop(2):
        _block_copy(ctx, x, out, c, c, row, c)
    return out


# a GEMM's output tile picked by both tile loops: commit_view at two runtime starts

axes(GM=4, GN=2, GT=8)
GRows = DmTensor[i32, Chip, Cluster, m("VA"), m("GM, GN, GT")]


def committed_blocks(rolled: bool) -> Any:
    """out (m, n) = x (m, n) + 0 through a MAIN stream committed into the tile at both loop indices."""

    @device(chip=1)
    def grid(ctx: Context, x: HbmTensor[i32, Chip, m("VA, GM, GN, GT")]) -> HbmTensor[i32, Chip, m("VA, GM, GN, GT")]:
        d = x.to_dm(ctx.tdma, GRows)
        out = GRows.new()
        for i in (ctx.loop(4) if rolled else range(4)):
            for j in (ctx.loop(2) if rolled else range(2)):
                src = d.view().tile(m("GM"), 1, m("1 # 4, GN, GT"), 3 - i).tile(m("GN"), 1, m("1 # 4, 1 # 2, GT"), j)
                dst = out.view_mut().tile(m("GM"), 1, m("1 #{!} 4, GN, GT"), i) \
                    .tile(m("GN"), 1, m("1 #{!} 4, 1 #{!} 2, GT"), 1 - j)
                (ctx.main.begin(src).fetch(m("1"), m("GT")).collect(m("1"), m("GT"))
                 .commit_trim(m("GT")).commit_view(dst))
        return out.to_hbm(ctx.tdma)
    return grid
