"""Own kernels the redistribution rules refuse (docs/machine/topology.md "Redistributions")."""

import numpy as np

from npu_opt import *

axes(P=4, S=4, R=8, W=8, T=2)

Full = DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("S, R, W")]
Out = HbmTensor[i32, m("P"), m("R, W")]


def _piece(element):
    return DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), element]


@device(chip=4)
def not_a_permutation(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> Out:
    d = x.to_dm(ctx.tdma, Full)
    return d.chip_shuffle([0, 1, 2]).chip_slice(m("S"), m("R, W"), [0, 0, 0, 0]).to_dm(
        ctx.tdma, _piece(m("R, W"))).to_hbm(ctx.tdma, Out)


@device(chip=4)
def position_out_of_range(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> Out:
    d = x.to_dm(ctx.tdma, Full)
    return d.chip_slice(m("S"), m("R, W"), [0, 1, 2, 4]).to_dm(ctx.tdma, _piece(m("R, W"))).to_hbm(ctx.tdma, Out)


@device(chip=4)
def four_byte_step(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> HbmTensor[i32, m("P"), m("S, R")]:
    d = x.to_dm(ctx.tdma, Full)
    return d.chip_slice(m("W"), m("S, R"), [0, 1, 2, 3]).to_dm(ctx.tdma, _piece(m("S, R"))).to_hbm(
        ctx.tdma, HbmTensor[i32, m("P"), m("S, R")])


@device(chip=4)
def asymmetric_inner(ctx: Context, x: HbmTensor[i32, m("P"), m("R, S, W")]) -> Out:
    d = x.to_dm(ctx.tdma, _piece(m("R, S, W")))
    return d.asymmetric_chip_slice(ctx.sub, m("S"), m("R, W"), [0, 1, 2, 3]).to_hbm(ctx.tdma, Out)


@device(chip=4)
def float_position(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> Out:
    d = x.to_dm(ctx.tdma, Full)
    return d.chip_slice(m("S"), m("R, W"), [0.5, 1, 2, 3]).to_dm(ctx.tdma, _piece(m("R, W"))).to_hbm(ctx.tdma, Out)


@device(chip=4)
def numpy_positions(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> Out:
    d = x.to_dm(ctx.tdma, Full)
    return d.chip_slice(m("S"), m("R, W"), np.arange(4)).to_dm(ctx.tdma, _piece(m("R, W"))).to_hbm(ctx.tdma, Out)


@device(chip=4)
def swap_padded_clusters(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> HbmTensor[i32, m("P"), m("S, R, W")]:
    d = x.to_dm(ctx.tdma, Full)
    return d.cluster_swap().to_dm(ctx.tdma, Full).to_hbm(ctx.tdma, HbmTensor[i32, m("P"), m("S, R, W")])


@device(chip=4)
def plan_as_tensor(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> HbmTensor[i32, m("P"), m("S, R, W")]:
    d = x.to_dm(ctx.tdma, Full)
    return d.chip_shuffle([3, 2, 1, 0]).to_hbm(ctx.tdma, HbmTensor[i32, m("P"), m("S, R, W")])


@device(chip=4)
def shuffle_after_slice(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> Out:
    d = x.to_dm(ctx.tdma, Full)
    return d.chip_slice(m("S"), m("R, W"), [0, 1, 2, 3]).chip_shuffle([1, 2, 3, 0]).to_dm(
        ctx.tdma, _piece(m("R, W"))).to_hbm(ctx.tdma, Out)


@device(chip=4)
def on_the_main_context(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> Out:
    d = x.to_dm(ctx.tdma, Full)
    return d.asymmetric_chip_slice(ctx.main, m("S"), m("R, W"), [0, 1, 2, 3]).to_hbm(ctx.tdma, Out)


@device(chip=4)
def four_byte_burst(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> HbmTensor[i32, m("P"), m("W, R")]:
    d = x.to_dm(ctx.tdma, Full)
    return d.chip_slice(m("S"), m("R, W"), [0, 1, 2, 3]).to_dm(
        ctx.tdma, DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("W, R")]).to_hbm(
        ctx.tdma, HbmTensor[i32, m("P"), m("W, R")])


@device(chip=4)
def plan_onto_a_broadcast(ctx: Context, x: HbmTensor[i32, m("P"), m("S, R, W")]) -> Out:
    d = x.to_dm(ctx.tdma, Full)
    return d.chip_slice(m("S"), m("R, W"), [0, 1, 2, 3]).to_dm(
        ctx.tdma, DmTensor[i32, m("4"), m("1 # 2"), m("1 # 256"), m("R, W")]).to_hbm(ctx.tdma, Out)


@device(chip=4)
def asymmetric_hole_below(ctx: Context, x: HbmTensor[i32, m("P"), m("S, 1 #{!} 2, R, W")]) -> HbmTensor[i32, m("P"), m("1 #{!} 2, R, W")]:
    d = x.to_dm(ctx.tdma, _piece(m("S, 1 #{!} 2, R, W")))
    return d.asymmetric_chip_slice(ctx.sub, m("S"), m("1 #{!} 2, R, W"), [0, 1, 2, 3]).to_hbm(
        ctx.tdma, HbmTensor[i32, m("P"), m("1 #{!} 2, R, W")])
