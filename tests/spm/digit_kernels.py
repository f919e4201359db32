"""Kernels of the staged gather / scatter indexed by a digit of an axis (docs/machine/spm.md
"An indexed digit of an axis"): the index selects `K / 2` (or `K % 4`), the rest of K rides
in the payload."""

from npu_opt import *

axes(H=3, K=20, J=16, D=8, G=16, N=12)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def high_digit(ctx: Context, table: HbmTensor[i16, Chip, m("K, D")],
               offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[i16, Chip, m("G, K % 2, D")]:
    """Each offset names a pair of K rows, `K / 2`; the pair rides in the row."""
    out = table.gather(m("K / 2"), m("K % 2, D")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[i16, Chip, Cluster, m("G # 64"), m("K % 2, D")])
    return out.to_hbm(ctx.tdma, HbmTensor[i16, Chip, m("G, K % 2, D")])


@device(chip=1)
def low_digit(ctx: Context, table: HbmTensor[i16, Chip, m("J, D")],
              offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[i16, Chip, m("J / 4, G, D")]:
    """The index selects `J % 4`; every `J / 4` block gives its row."""
    out = table.gather(m("J % 4"), m("J / 4, D")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[i16, Chip, Cluster, m("J / 4, G"), m("D")])
    return out.to_hbm(ctx.tdma, HbmTensor[i16, Chip, m("J / 4, G, D")])


@device(chip=1)
def inner_digit(ctx: Context, table: HbmTensor[i32, Chip, m("H, K, D")],
                picks: HbmTensor[i32, Chip, m("N")]) -> HbmTensor[i32, Chip, m("N, H, K % 5, D")]:
    """`K / 5` of an inner axis, by row numbers in SPM."""
    d = picks.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("N")])
    idx = d.to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m("1 # 4"), m("N")])
    out = table.gather(m("K / 5"), m("H, K % 5, D")).by_positions(m("N"), idx).to_dm(
        ctx.tdma, DmTensor[i32, Chip, Cluster, m("N # 16, H # 4"), m("K % 5, D")])
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("N, H, K % 5, D")])


@device(chip=1)
def scatter_high(ctx: Context, cache: Mut[HbmTensor[i16, Chip, m("K, D")]], offsets: HbmTensor[i32, Chip, m("N")],
                 fresh: HbmTensor[i16, Chip, m("N, K % 2, D")]) -> None:
    d = fresh.to_dm(ctx.tdma, DmTensor[i16, Chip, Cluster, m("N # 64"), m("K % 2, D")])
    cache.view_mut().scatter(m("K / 2"), m("K % 2, D")).by_byte_offsets(offsets).from_dm(ctx.tdma, d)


@device(chip=1)
def scatter_low(ctx: Context, cache: Mut[HbmTensor[i16, Chip, m("J, D")]], offsets: HbmTensor[i32, Chip, m("N")],
                fresh: HbmTensor[i16, Chip, m("J / 4, N, D")]) -> None:
    d = fresh.to_dm(ctx.tdma, DmTensor[i16, Chip, Cluster, m("J / 4, N # 16"), m("D")])
    cache.view_mut().scatter(m("J % 4"), m("J / 4, D")).by_byte_offsets(offsets).from_dm(ctx.tdma, d)
