"""Own gather kernels (docs/machine/dma.md "Gather"): scaled, unscaled, placed, multi-chip."""

from npu_opt import *

axes(T=300, E=64, N=768, P=512, CL=2, C=2,
     B=24, H=4, S=16, F=32, NB=16)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def rows_scaled(ctx: Context, table: HbmTensor[i8, Chip, m("T, E")],
                index: HbmTensor[i32, Chip, m("N")]) -> HbmTensor[i8, Chip, m("N, E")]:
    """768 rows of 64 bytes, 3 per slice."""
    v = table.dma_gather_scaled(index, DmTensor[i8, Chip, Cluster, m("N / 3"), m("N % 3, E")])
    return v.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("N, E")])


@device(chip=1)
def rows_unscaled_placed(ctx: Context, table: HbmTensor[f32, Chip, m("T, E")],
                         index: HbmTensor[i32, Chip, m("CL, P")]) -> HbmTensor[f32, Chip, m("CL, P, E")]:
    """Each cluster gathers its own 512 rows through its own half of the index."""
    idx = index.to_dm(ctx.tdma, DmTensor[i32, Chip, m("CL"), m("P / 2"), m("P % 2")])
    v = table.dma_gather_unscaled(idx, DmTensor[f32, Chip, m("CL"), m("P / 2"), m("P % 2, E")])
    return v.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("CL, P, E")])


@device(chip=1)
def paged_blocks(ctx: Context, pool: HbmTensor[bf16, Chip, m("B, H, S, F")],
                 table: HbmTensor[i32, Chip, m("NB")]) -> HbmTensor[bf16, Chip, m("NB, S, H, F")]:
    """Block table in a tensor: logical block b reads pool block table[b] (scaled offsets)."""
    v = pool.dma_gather_scaled(table, DmTensor[bf16, Chip, Cluster, m("NB, S"), m("H, F")])
    return v.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("NB, S, H, F")])


@device(chip=2)
def two_chip_rows(ctx: Context, table: HbmTensor[i16, m("C"), m("T, E")],
                  index: HbmTensor[i32, m("C"), m("P")]) -> HbmTensor[i16, m("C"), m("P, E")]:
    """Every chip gathers from its own table with its own index."""
    v = table.dma_gather_scaled(index, DmTensor[i16, m("C"), Cluster, m("P / 2"), m("P % 2, E")])
    return v.to_hbm(ctx.tdma, HbmTensor[i16, m("C"), m("P, E")])


@device(chip=1)
def unscaled_index_in_hbm(ctx: Context, table: HbmTensor[i8, Chip, m("T, E")],
                          index: HbmTensor[i32, Chip, m("N")]) -> HbmTensor[i8, Chip, m("N, E")]:
    v = table.dma_gather_unscaled(index, DmTensor[i8, Chip, Cluster, m("N / 3"), m("N % 3, E")])   # TYPE-6
    return v.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("N, E")])


@device(chip=1)
def two_keys(ctx: Context, pool: HbmTensor[bf16, Chip, m("B, H, S, F")],
             table: HbmTensor[i32, Chip, m("NB")]) -> HbmTensor[bf16, Chip, m("NB, S, F")]:
    v = pool.dma_gather_scaled(table, DmTensor[bf16, Chip, Cluster, m("NB, S"), m("F")])   # GATHER-3: B and H left
    return v.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("NB, S, F")])


@device(chip=1)
def bad_slices(ctx: Context, table: HbmTensor[i8, Chip, m("T, E")],
               index: HbmTensor[i32, Chip, m("N")]) -> HbmTensor[i8, Chip, m("N, E")]:
    v = table.dma_gather_scaled(index, DmTensor[i8, Chip, Cluster, m("N / 2"), m("N % 2, E")])   # 384 slices
    return v.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("N, E")])


axes(K=512, V=64, R=700, Q=2)


@device(chip=1)
def scatter_rows(ctx: Context, data: HbmTensor[bf16, Chip, m("K, V")],
                 index: HbmTensor[i32, Chip, m("K")]) -> HbmTensor[bf16, Chip, m("R, V")]:
    """512 rows into a 700-row cache: the rest stays zero."""
    d = data.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("K / 2"), m("K % 2, V")])
    return d.dma_scatter(index, HbmTensor[bf16, Chip, m("R, V")], m("K"))


@device(chip=2)
def two_chip_scatter(ctx: Context, data: HbmTensor[i8, m("Q"), m("K, V")],
                     index: HbmTensor[i32, m("Q"), m("K")]) -> HbmTensor[i8, m("Q"), m("R, V")]:
    d = data.to_dm(ctx.tdma, DmTensor[i8, m("Q"), Cluster, m("K / 2"), m("K % 2, V")])
    return d.dma_scatter(index, HbmTensor[i8, m("Q"), m("R, V")], m("K"))


@device(chip=1)
def scatter_then_gather(ctx: Context, data: HbmTensor[i8, Chip, m("K, V")],
                        index: HbmTensor[i32, Chip, m("K")]) -> HbmTensor[i8, Chip, m("K, V")]:
    """Scatter rows out and gather them back with the same offsets: the identity."""
    d = data.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("K / 2"), m("K % 2, V")])
    cache = d.dma_scatter(index, HbmTensor[i8, Chip, m("R, V")], m("K"))
    back = cache.dma_gather_scaled(index, DmTensor[i8, Chip, Cluster, m("K / 2"), m("K % 2, V")])
    return back.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("K, V")])
