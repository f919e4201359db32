"""Kernels with resident DM parameters (docs/parameters.md), for tests/params/test_resident.py."""

from npu_opt import *

axes(S=512, H=16, I=2, E=70000, T=256, C=2)

Chip = m("1")
Cluster = m("1 # 2")
Rows = DmTensor[i32, Chip, Cluster, m("S / 8"), m("S % 8, H")]
Wide = DmTensor[i8, Chip, Cluster, m("S / 8"), m("S % 8, H")]
Big = DmTensor[i32, Chip, Cluster, m("T"), m("E")]


def _add(ctx, a, b):
    """a + b (i32, element-wise) as a stream ending at its commit_trim."""
    return (ctx.main.begin_interleaved(a.view(), b.view(), m("I"))
            .fetch(m("S % 8, H / 8, I"), m("H % 8"))
            .collect(m("S % 8, H / 8, I"), m("H % 8"))
            .vector_init()
            .vector_intra_slice_unzip(m("I"), m("S % 8, H / 8"))
            .vector_clip_zip(ClipBinaryOpI32.ADD_FXP)
            .vector_final()
            .commit_trim(m("H % 8")))


@device(chip=1)
def add_into(ctx: Context, x: HbmTensor[i32, Chip, m("S, H")], acc: Mut[Rows]) -> None:
    _add(ctx, x.to_dm(ctx.tdma, Rows), acc).commit_view(acc.view_mut())


@device(chip=1)
def read_out(ctx: Context, acc: Rows) -> HbmTensor[i32, Chip, m("S, H")]:
    return acc.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("S, H")])


@device(chip=1)
def add_resident(ctx: Context, x: HbmTensor[i32, Chip, m("S, H")], w: Rows,
                 acc: Mut[Rows]) -> HbmTensor[i32, Chip, m("S, H")]:
    """acc += w (both resident), and return x + w: two resident parameters, one read only."""
    _add(ctx, acc, w).commit_view(acc.view_mut())
    return _add(ctx, x.to_dm(ctx.tdma, Rows), w).commit(m("S % 8, H")).to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("S, H")])


@device(chip=1)
def sum_two(ctx: Context, a: Rows, b: Rows) -> HbmTensor[i32, Chip, m("S, H")]:
    return _add(ctx, a, b).commit(m("S % 8, H")).to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("S, H")])


@device(chip=1)
def load_then_bump(ctx: Context, start: HbmTensor[i32, Chip, m("S, H")], x: HbmTensor[i32, Chip, m("S, H")],
                   acc: Mut[Rows]) -> None:
    """acc = start, then acc += x, in one launch (the second write reads the first)."""
    start.view().to_dm_view(ctx.tdma, acc.view_mut())
    _add(ctx, x.to_dm(ctx.tdma, Rows), acc).commit_view(acc.view_mut())


@device(chip=1)
def untouched(ctx: Context, acc: Mut[Rows]) -> HbmTensor[i32, Chip, m("S, H")]:
    return acc.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("S, H")])


@device(chip=1)
def fill_half(ctx: Context, acc: Mut[Rows]) -> None:
    """The first 8 of every row's 16 cells set to 7 (`memset` of a tile), the rest kept."""
    acc.view_mut().tile(m("H"), 8, m("S % 8, H = 8 #{!} 16"), 0).memset(ctx.sub, 7)


# --- refused ---------------------------------------------------------------------------

@device(chip=1)
def write_read_only(ctx: Context, x: HbmTensor[i32, Chip, m("S, H")], acc: Rows) -> None:
    x.view().to_dm_view(ctx.tdma, acc.view_mut())


@device(chip=1)
def too_big(ctx: Context, a: Big,
            b: Big) -> HbmTensor[i32, Chip, m("T, E")]:
    return a.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("T, E")])


TwoChips = DmTensor[bf16, m("C"), Cluster, m("S / 8"), m("S % 8, H")]


@device(chip=2)
def two_chip_read(ctx: Context, acc: TwoChips) -> HbmTensor[bf16, m("C"), m("S, H")]:
    return acc.to_hbm(ctx.tdma, HbmTensor[bf16, m("C"), m("S, H")])


Rows2 = DmTensor[i32, m("C"), Cluster, m("S / 8"), m("S % 8, H")]  # one copy of Rows per chip


@device(chip=2)
def read_out_2chip(ctx: Context, acc: Rows2) -> HbmTensor[i32, m("C"), m("S, H")]:
    return acc.to_hbm(ctx.tdma, HbmTensor[i32, m("C"), m("S, H")])
