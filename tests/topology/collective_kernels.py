"""Kernels calling the collectives of npu_opt.collectives (docs/collectives.md), for
tests/topology/test_collective_calls.py: four and two chips, the two clusters of a chip,
i32 and f32, Elements of one flit, of three, of half a flit and padded to two."""

from __future__ import annotations

from npu_opt import *
from npu_opt.collectives import (
    chip_all_gather, chip_all_reduce, chip_reduce_scatter, cluster_all_gather, cluster_all_reduce,
    cluster_reduce_scatter,
)

axes(Q=4, P=4, S=4, C=2, G=2, H=2, T=2, N=256, W=8, V=24, U=4, Z=12)

Pad = m("Z # 16")


def _chips(dtype, element):
    return DmTensor[dtype, m("Q"), m("1 # 2"), m("N"), element]


@device(chip=4)
def ring_i32(ctx: Context, x: HbmTensor[i32, m("Q"), m("N, W")]) -> HbmTensor[i32, m("Q"), m("N, W")]:
    return chip_all_reduce(ctx, x.to_dm(ctx.tdma, _chips(i32, m("W")))).to_hbm(ctx.tdma)


@device(chip=4)
def ring_f32(ctx: Context, x: HbmTensor[f32, m("Q"), m("N, V")]) -> HbmTensor[f32, m("Q"), m("N, V")]:
    return chip_all_reduce(ctx, x.to_dm(ctx.tdma, _chips(f32, m("V")))).to_hbm(ctx.tdma)


@device(chip=4)
def butterfly_f32(ctx: Context, x: HbmTensor[f32, m("Q"), m("N, V")]) -> HbmTensor[f32, m("Q"), m("N, V")]:
    d = x.to_dm(ctx.tdma, _chips(f32, m("V")))
    return chip_all_reduce(ctx, d, algorithm="butterfly").to_hbm(ctx.tdma)


@device(chip=4)
def butterfly_i32(ctx: Context, x: HbmTensor[i32, m("Q"), m("N, U")]) -> HbmTensor[i32, m("Q"), m("N, U")]:
    d = x.to_dm(ctx.tdma, _chips(i32, m("U")))
    return chip_all_reduce(ctx, d, algorithm="butterfly").to_hbm(ctx.tdma)


@device(chip=2)
def ring_two_chips(ctx: Context, x: HbmTensor[f32, m("C"), m("N, W")]) -> HbmTensor[f32, m("C"), m("N, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[f32, m("C"), m("1 # 2"), m("N"), m("W")])
    return chip_all_reduce(ctx, d).to_hbm(ctx.tdma)


@device(chip=4)
def reduce_scatter_i32(ctx: Context, x: HbmTensor[i32, m("Q"), m("S, N, W")]) -> HbmTensor[i32, m("Q"), m("N, W")]:
    d = x.to_dm(ctx.tdma, _chips(i32, m("S, W")))
    return chip_reduce_scatter(ctx, d, m("S"), m("W")).to_hbm(ctx.tdma, HbmTensor[i32, m("Q"), m("N, W")])


@device(chip=4)
def reduce_scatter_f32(ctx: Context, x: HbmTensor[f32, m("Q"), m("S, N, V")]) -> HbmTensor[f32, m("Q"), m("N, V")]:
    d = x.to_dm(ctx.tdma, _chips(f32, m("S, V")))
    return chip_reduce_scatter(ctx, d, m("S"), m("V")).to_hbm(ctx.tdma, HbmTensor[f32, m("Q"), m("N, V")])


@device(chip=4)
def all_gather_bf16(ctx: Context, x: HbmTensor[bf16, m("Q"), m("N, V")]) -> HbmTensor[bf16, m("P"), m("Q, N, V")]:
    every = chip_all_gather(ctx, x.to_dm(ctx.tdma, _chips(bf16, m("V"))))
    mine = every.reshape(DmTensor[bf16, m("P"), m("1 # 2"), m("N"), m("Q, V")])   # each chip's copy
    return mine.to_hbm(ctx.tdma, HbmTensor[bf16, m("P"), m("Q, N, V")])


def _clusters(dtype, element):
    return DmTensor[dtype, m("1"), m("G"), m("N"), element]


@device(chip=1)
def cluster_sum_f32(ctx: Context, x: HbmTensor[f32, m("1"), m("G, N, V")]) -> HbmTensor[f32, m("1"), m("G, N, V")]:
    return cluster_all_reduce(ctx, x.to_dm(ctx.tdma, _clusters(f32, m("V")))).to_hbm(ctx.tdma)


@device(chip=1)
def cluster_sum_padded(ctx: Context, x: HbmTensor[i32, m("1"), m("G, N, Z")]) -> HbmTensor[i32, m("1"), m("G, N, Z")]:
    d = x.to_dm(ctx.tdma, _clusters(i32, Pad))
    return cluster_all_reduce(ctx, d).to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("G, N, Z")])


@device(chip=1)
def cluster_scatter_i32(ctx: Context, x: HbmTensor[i32, m("1"), m("G, T, N, U")]) -> HbmTensor[i32, m("1"), m("G, N, U")]:
    d = x.to_dm(ctx.tdma, _clusters(i32, m("T, U")))
    return cluster_reduce_scatter(ctx, d, m("T"), m("U")).to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("G, N, U")])


@device(chip=1)
def cluster_scatter_f32(ctx: Context, x: HbmTensor[f32, m("1"), m("G, T, N, V")]) -> HbmTensor[f32, m("1"), m("G, N, V")]:
    d = x.to_dm(ctx.tdma, _clusters(f32, m("T, V")))
    return cluster_reduce_scatter(ctx, d, m("T"), m("V")).to_hbm(ctx.tdma, HbmTensor[f32, m("1"), m("G, N, V")])


@device(chip=1)
def cluster_gather_i32(ctx: Context, x: HbmTensor[i32, m("1"), m("G, N, W")]) -> HbmTensor[i32, m("1"), m("H, G, N, W")]:
    both = cluster_all_gather(ctx, x.to_dm(ctx.tdma, _clusters(i32, m("W"))))
    mine = both.reshape(DmTensor[i32, m("1"), m("H"), m("N"), m("G, W")])           # each cluster's copy
    return mine.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("H, G, N, W")])
