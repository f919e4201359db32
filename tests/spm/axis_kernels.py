"""Kernels of the staged gather / scatter on an indexed axis that is not the tensor's
outermost, or several consecutive axes (docs/machine/spm.md "Staged gather")."""

from npu_opt import *

axes(H=4, K=50, D=16, G=64, A=5, B=10, N=16, S=24, C=90, W=32, E=8)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def inner_axis(ctx: Context, table: HbmTensor[i16, Chip, m("H, K, D")],
               offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[i16, Chip, m("H, G, D")]:
    """`np.take(table, k, axis=1)`: each offset names a K position, read from every H block."""
    out = table.gather(m("K"), m("H, D")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[i16, Chip, Cluster, m("H, G"), m("D")])
    return out.to_hbm(ctx.tdma, HbmTensor[i16, Chip, m("H, G, D")])


@device(chip=1)
def inner_axis_by_positions(ctx: Context, table: HbmTensor[i16, Chip, m("H, K, D")],
                            picks: HbmTensor[i32, Chip, m("N")]) -> HbmTensor[i16, Chip, m("N, H, D")]:
    d = picks.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("N")])
    idx = d.to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m("1 # 4"), m("N")])
    out = table.gather(m("K"), m("H, D")).by_positions(m("N"), idx).to_dm(
        ctx.tdma, DmTensor[i16, Chip, Cluster, m("N, H # 8"), m("D")])
    return out.to_hbm(ctx.tdma, HbmTensor[i16, Chip, m("N, H, D")])


@device(chip=1)
def innermost_axis(ctx: Context, table: HbmTensor[i32, Chip, m("H, K")],
                   offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[i32, Chip, m("H, G")]:
    """The indexed axis is the innermost: each offset reads one element of every H row."""
    out = table.gather(m("K"), m("H")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[i32, Chip, Cluster, m("H # 256"), m("G")])
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("H, G")])


@device(chip=1)
def middle_region(ctx: Context, table: HbmTensor[i8, Chip, m("H, A, B, E")],
                  offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[i8, Chip, m("H, G, E")]:
    """Two consecutive axes (A, B) indexed as one region of 50 positions, between H and E."""
    out = table.gather(m("A, B"), m("H, E")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[i8, Chip, Cluster, m("H, G"), m("E")])
    return out.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("H, G, E")])


def _prefixed(n):
    @device(chip=1)
    def inner_axis_prefixed(ctx: Context, table: HbmTensor[i16, Chip, m("H, K, D")],
               offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[i16, Chip, m("H, G, D")]:
        out = table.gather(m("K"), m("H, D")).by_byte_offsets(offsets).sparse_prefix(n).to_dm(
            ctx.tdma, DmTensor[i16, Chip, Cluster, m("H, G"), m("D")])
        return out.to_hbm(ctx.tdma, HbmTensor[i16, Chip, m("H, G, D")])
    return inner_axis_prefixed


PREFIXED = _prefixed(20)


@device(chip=1)
def scatter_inner(ctx: Context, fresh: HbmTensor[bf16, Chip, m("H, S, W")], offsets: HbmTensor[i32, Chip, m("S")],
                  cache: Mut[HbmTensor[bf16, Chip, m("H, C, W")]]) -> None:
    """`cache[:, rows] = fresh`: each offset names a C position of every H block."""
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("H, S # 64"), m("W")])
    cache.view_mut().scatter(m("C"), m("H, W")).by_byte_offsets(offsets).from_dm(ctx.tdma, d)


@device(chip=1)
def scatter_region_by_positions(ctx: Context, fresh: HbmTensor[i8, Chip, m("H, N, E")],
                                rows: HbmTensor[i32, Chip, m("N")],
                                cache: Mut[HbmTensor[i8, Chip, m("H, A, B, E")]]) -> None:
    d = fresh.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("H, N # 64"), m("E")])
    r = rows.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("N")])
    idx = r.to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m("1 # 4"), m("N")])
    cache.view_mut().scatter(m("A, B"), m("H, E")).by_positions(m("N"), idx).from_dm(ctx.tdma, d)
