"""Own redistribution kernels (docs/machine/topology.md "Redistributions")."""

from npu_opt import *

axes(P=4, Q=4, S=4, R=8, W=8, G=2, K=2, N=256)

Full = DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("S, R, W")]
Piece = DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("R, W")]


@device(chip=4)
def rotate_and_pick(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> HbmTensor[i32, m("P"), m("R, W")]:
    """Chip c gets row S = (c + 2) % 4 of chip (c + 1) % 4."""
    d = x.to_dm(ctx.tdma, Full)
    out = d.chip_shuffle([1, 2, 3, 0]).chip_slice(m("S"), m("R, W"), [2, 3, 0, 1]).to_dm(ctx.tdma, Piece)
    return out.to_hbm(ctx.tdma, HbmTensor[i32, m("P"), m("R, W")])


@device(chip=4)
def two_slices(ctx: Context, x: HbmTensor[i32, m("P"), m("S, G, R, W")]) -> HbmTensor[i32, m("P"), m("G, W")]:
    """Two independently located axes removed in one copy: chip c keeps S = c and R = 7 - c
    of chip (c + 3) % 4."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("S, G, R, W")])
    plan = (d.view().chip_shuffle([3, 0, 1, 2])
            .chip_slice(m("S"), m("G, R, W"), [0, 1, 2, 3])
            .chip_slice(m("R"), m("G, W"), [7, 6, 5, 4]))
    out = plan.to_dm(ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("G, W")])
    return out.to_hbm(ctx.tdma, HbmTensor[i32, m("P"), m("G, W")])


@device(chip=2)
def swap_then_pick(ctx: Context, x: HbmTensor[i8, m("K"), m("G, S, N, W")]) -> HbmTensor[i8, m("K"), m("G, N, W")]:
    """Cluster k of chip c gets S = [3, 1][k] of cluster 1 - k of chip 1 - c."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("K"), m("G"), m("N"), m("S, W")])
    e = d.chip_shuffle([1, 0]).cluster_swap().cluster_slice(m("S"), m("W"), [3, 1]).to_dm(
        ctx.tdma, DmTensor[i8, m("K"), m("G"), m("N"), m("W")])
    return e.to_hbm(ctx.tdma, HbmTensor[i8, m("K"), m("G, N, W")])


@device(chip=4)
def keep_own_row(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> HbmTensor[i32, m("P"), m("R, W")]:
    """Chip c keeps its own row S = 3 - c, on the Sub context."""
    d = x.to_dm(ctx.tdma, Full)
    return d.asymmetric_chip_slice(ctx.sub, m("S"), m("R, W"), [3, 2, 1, 0]).to_hbm(
        ctx.tdma, HbmTensor[i32, m("P"), m("R, W")])


@device(chip=1)
def cluster_rows(ctx: Context, x: HbmTensor[i32, m("1"), m("K, S, R, W")]) -> HbmTensor[i32, m("1"), m("K, R, W")]:
    """Cluster k keeps row S = 2 k + 1 of its own data."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("K"), m("1 # 256"), m("S, R, W")])
    return d.asymmetric_cluster_slice(ctx.sub, m("S"), m("R, W"), [1, 3]).to_hbm(
        ctx.tdma, HbmTensor[i32, m("1"), m("K, R, W")])


@device(chip=4)
def into_a_row(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> HbmTensor[i32, m("P"), m("S, R, W")]:
    """Chip c's row S = 1 becomes row S = c of chip (c + 1) % 4; the other rows stay."""
    d = x.to_dm(ctx.tdma, Full)
    out = x.to_dm(ctx.tdma, Full)
    d.chip_shuffle([1, 2, 3, 0]).chip_slice(m("S"), m("R, W"), [0, 1, 2, 3]).to_dm_view(
        ctx.tdma, out.view_mut().tile(m("S"), 1, m("1 #{!} 4, R, W"), 1))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, m("P"), m("S, R, W")])


@device(chip=4)
def gather_chips(ctx: Context, x: HbmTensor[i32, m("P"), m("R, W")]) -> HbmTensor[i32, m("Q"), m("P, R, W")]:
    """Every chip receives every chip's rows: a `to_dm` whose Chip changes from P to a
    broadcast; the copies are relabelled Q to return each chip's own."""
    d = x.to_dm(ctx.tdma, Piece)
    every = d.to_dm(ctx.tdma, DmTensor[i32, m("4"), m("1 # 2"), m("1 # 256"), m("P, R, W")])
    mine = every.reshape(DmTensor[i32, m("Q"), m("1 # 2"), m("1 # 256"), m("P, R, W")])
    return mine.to_hbm(ctx.tdma, HbmTensor[i32, m("Q"), m("P, R, W")])


@device(chip=2)
def fold_clusters(ctx: Context, x: HbmTensor[i8, m("K"), m("G, N, W")]) -> HbmTensor[i8, m("K"), m("G, N, W")]:
    """Cluster G moves into the Element and the slices halve: all four DM levels change."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("K"), m("G"), m("N"), m("W")])
    e = d.to_dm(ctx.tdma, DmTensor[i8, m("K"), m("1 # 2"), m("N / 2"), m("G, N % 2, W")])
    return e.to_hbm(ctx.tdma, HbmTensor[i8, m("K"), m("G, N, W")])


@device(chip=2)
def swap_chip_and_cluster(ctx: Context, x: HbmTensor[i8, m("K"), m("G, N, W")]) -> HbmTensor[i8, m("G"), m("K, N, W")]:
    """The chip axis becomes the cluster axis and the other way round."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("K"), m("G"), m("N"), m("W")])
    e = d.to_dm(ctx.tdma, DmTensor[i8, m("G"), m("K"), m("N"), m("W")])
    return e.to_hbm(ctx.tdma, HbmTensor[i8, m("G"), m("K, N, W")])


@device(chip=4)
def from_a_tile(ctx: Context, x: HbmTensor[i32, m("P"), m("S, G, R, W")]) -> HbmTensor[i32, m("P"), m("R, W")]:
    """A plan over a tile of the tensor: chip c keeps S = c of its own G = 1 half."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("S, G, R, W")])
    half = d.view().tile(m("G"), 1, m("S, 1 # 2, R, W"), 1)
    out = half.chip_slice(m("S"), m("1 # 2, R, W"), [0, 1, 2, 3]).to_dm(
        ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("R, W")])
    return out.to_hbm(ctx.tdma, HbmTensor[i32, m("P"), m("R, W")])
