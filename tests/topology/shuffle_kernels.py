"""Own shuffle kernels (docs/machine/topology.md "Shuffles")."""

from npu_opt import *

axes(Q=4, L=2, A=256, B=64)


@device(chip=1)
def swap_clusters(ctx: Context, x: HbmTensor[i8, m("1"), m("L, A, B")]) -> HbmTensor[i8, m("1"), m("L, A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("L"), m("A"), m("B")])
    s = d.view().dm_cluster_shuffle(ctx.tdma, 2, [1, 0])
    return s.to_hbm(ctx.tdma, HbmTensor[i8, m("1"), m("L, A, B")])


@device(chip=4)
def rotate_chips(ctx: Context, x: HbmTensor[bf16, m("Q"), m("L, A, B")]) -> HbmTensor[bf16, m("Q"), m("L, A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[bf16, m("Q"), m("L"), m("A"), m("B")])
    s = d.view().dm_chip_shuffle(ctx.tdma, 4, shuffle_pattern=[1, 2, 3, 0])
    return s.to_hbm(ctx.tdma, HbmTensor[bf16, m("Q"), m("L, A, B")])


@device(chip=4)
def hbm_broadcast_chip(ctx: Context, x: HbmTensor[i32, m("Q"), m("A, B")]) -> HbmTensor[i32, m("Q"), m("A, B")]:
    """Every chip gets chip 2's rows (a pattern need not be a permutation)."""
    return x.hbm_chip_shuffle(ctx.tdma, 4, [2, 2, 2, 2])


@device(chip=1)
def wrong_dim(ctx: Context, x: HbmTensor[i8, m("1"), m("L, A, B")]) -> HbmTensor[i8, m("1"), m("L, A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("L"), m("A"), m("B")])
    s = d.view().dm_cluster_shuffle(ctx.tdma, 4, [1, 0, 3, 2])     # SHUFFLE-1: 2 clusters
    return s.to_hbm(ctx.tdma, HbmTensor[i8, m("1"), m("L, A, B")])


@device(chip=1)
def on_the_tensor_unit(ctx: Context, x: HbmTensor[i8, m("1"), m("L, A, B")]) -> HbmTensor[i8, m("1"), m("L, A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("L"), m("A"), m("B")])
    s = d.view().dm_cluster_shuffle(ctx.main, 2, [1, 0])              # CTX-1
    return s.to_hbm(ctx.tdma, HbmTensor[i8, m("1"), m("L, A, B")])


@device(chip=4)
def hbm_rotation_dim_inferred(ctx: Context, x: HbmTensor[i32, m("Q"), m("A, B")]) -> HbmTensor[i32, m("Q"), m("A, B")]:
    """v0.9's `hbm_chip_shuffle(&mut ctx.tdma, &[1, 2, 3, 0])`: the chip count is the pattern's length."""
    return x.hbm_chip_shuffle(ctx.tdma, [1, 2, 3, 0])


@device(chip=4)
def dm_rotation_dim_inferred(ctx: Context, x: HbmTensor[i32, m("Q"), m("A, B")]) -> HbmTensor[i32, m("Q"), m("A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("Q"), m("1 # 2"), m("A"), m("B")])
    return d.view().dm_chip_shuffle(ctx.tdma, [3, 0, 1, 2]).to_hbm(ctx.tdma, HbmTensor[i32, m("Q"), m("A, B")])


@device(chip=4)
def short_pattern(ctx: Context, x: HbmTensor[i32, m("Q"), m("A, B")]) -> HbmTensor[i32, m("Q"), m("A, B")]:
    return x.hbm_chip_shuffle(ctx.tdma, [1, 0])                     # SHUFFLE-1: 4 chips
