"""Kernels whose `to_spm`, interleaved `begin` and scatter read a tile at a rolled loop's index, written
rolled (`ctx.loop`) and unrolled (a Python `for`), for tests/loops/test_loop_readers.py."""

from typing import Any

from npu_opt import *

axes(RE=4, RN=16, RS=512, RT=4, RH=8, RI=2)
Chip, Cluster = m("1"), m("1 # 2")
Lists = DmTensor[i32, Chip, Cluster, m("1 # 64"), m("RE, RN")]
List = DmTensor[i32, Chip, Cluster, m("1 # 64"), m("RN")]
Rows = DmTensor[i32, Chip, Cluster, m("RS / 8"), m("RS % 8, RT, RH")]


def spm_reversed(rolled: bool, shift: int = 0) -> Any:
    """out's row i is x's row 3 - i + shift, each staged through SPM by `to_spm` of the tile."""

    @device(chip=1)
    def spm_rows(ctx: Context, x: HbmTensor[i32, Chip, m("RE, RN")]) -> HbmTensor[i32, Chip, m("RE, RN")]:
        d = x.to_dm(ctx.tdma, Lists)
        out = Lists.new()
        for i in (ctx.loop(4) if rolled else range(4)):
            tile = d.view().tile(m("RE"), 1, m("1 # 4, RN"), 3 - i + shift)
            s = tile.to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m("1"), m("RN")])
            s.to_dm(ctx.tdma, List).view().to_dm_view(ctx.tdma, out.view_mut().tile(m("RE"), 1, m("1 #{!} 4, RN"), i))
        return out.to_hbm(ctx.tdma)
    return spm_rows


def _min_of(ctx: Context, a: Any, b: Any) -> Any:
    """min(a, b) of two (RS, RH) tiles by one interleaved stream, a fresh DM tensor."""
    return (ctx.main.begin_interleaved(a, b, m("RI"))
            .fetch(m("RS % 8, RI"), m("RH")).collect(m("RS % 8, RI"), m("RH"))
            .vector_init().vector_intra_slice_unzip(m("RI"), m("RS % 8"))
            .vector_clip_zip(ClipBinaryOpI32.MIN).vector_final()
            .commit_trim(m("RH")).commit(m("RS % 8, RH")))


def interleaved_min(rolled: bool, rhs_start: Any = None) -> Any:
    """out[:, t] = min(x[:, t], y[:, t]) for each t: an interleaved `begin` over the tiles of x
    and y at the loop index (`rhs_start(t)`: y's tile elsewhere)."""

    @device(chip=1)
    def pairwise_min(ctx: Context, x: HbmTensor[i32, Chip, m("RS, RT, RH")],
                     y: HbmTensor[i32, Chip, m("RS, RT, RH")]) -> HbmTensor[i32, Chip, m("RS, RT, RH")]:
        dx, dy = x.to_dm(ctx.tdma, Rows), y.to_dm(ctx.tdma, Rows)
        out = Rows.new()
        for t in (ctx.loop(4) if rolled else range(4)):
            a = dx.view().tile(m("RT"), 1, m("RS % 8, 1 # 4, RH"), t)
            b = dy.view().tile(m("RT"), 1, m("RS % 8, 1 # 4, RH"), t if rhs_start is None else rhs_start(t))
            _min_of(ctx, a, b).view().to_dm_view(ctx.tdma, out.view_mut().tile(m("RT"), 1, m("RS % 8, 1 #{!} 4, RH"), t))
        return out.to_hbm(ctx.tdma)
    return pairwise_min


axes(RR=24, RW=32, RC=90)


def scatter_tiles(rolled: bool) -> Any:
    """Tile i of the updates scattered into the cache at the byte offsets of row i of the
    index, for each i: a scatter out of a tile at the loop index."""

    @device(chip=1)
    def scattered(ctx: Context, fresh: HbmTensor[bf16, Chip, m("RR, RE, RW")],
                  offsets: HbmTensor[i32, Chip, m("RE, RR")], cache: Mut[HbmTensor[bf16, Chip, m("RC, RW")]]) -> None:
        d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("RR # 64"), m("RE, RW")])
        for i in (ctx.loop(4) if rolled else range(4)):
            row = offsets.view().tile(m("RE"), 1, m("1 # 4, RR"), i).to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("RR")])
            tile = d.view().tile(m("RE"), 1, m("1 # 4, RW"), i)
            cache.view_mut().scatter(m("RC"), m("RW")).by_byte_offsets(row).from_dm_view(ctx.tdma, tile)
    return scattered


@device(chip=1)
def spm_row_at_launch(ctx: Context, x: HbmTensor[i32, Chip, m("RE, RN")], row: HbmScalar[usize]) -> HbmTensor[i32, Chip, m("RN")]:
    """Row `row` of x staged through SPM: `to_spm` of a tile at a launch value."""
    d = x.to_dm(ctx.tdma, Lists)
    s = d.view().tile(m("RE"), 1, m("1 # 4, RN"), row.to_spm(ctx.tdma)).to_spm(
        ctx.tdma, SpmTensor[i32, Chip, Cluster, m("1"), m("RN")])
    return s.to_dm(ctx.tdma, List).to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("RN")])
