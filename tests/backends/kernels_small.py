"""Small kernels for the cpu backend's property tests: a bf16 contraction with an f32
result and an i8 pair of contractions (zero point, sequential lane fold, Cast Engine) with
a tuple result. One slice each, sized to run in milliseconds. The module postpones its
annotations, so the tuple return is seen as a string and evaluated."""

from __future__ import annotations

from npu_opt import *

axes(I=8, R=8, K=64, A=16, E=64, N=8)

Chip = m("1")
Cluster = m("1 # 2")
Rows = m("I # 64")        # one row of x per slice, 56 padded slices
One = m("1 # 64")         # a single live slice

ZERO_POINT = -128          # i8 -> i9: x - (-128) spans 0..255


@device(chip=1)
def small_bf16(ctx: Context,
               x: HbmTensor[bf16, Chip, m("I, K")],
               w: HbmTensor[bf16, Chip, m("R, K")]) -> HbmTensor[f32, Chip, m("I, R")]:
    """y[i, r] = sum_k x[i, k] * w[r, k]: tree over K % 32, then K / 32 in time."""
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Rows, m("K")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Rows, m("R, K")])   # broadcast to every row
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("R"), m("K"))
             .collect(m("R, K / 16"), m("K % 16"))
             .to_trf(m("R"), m("K")))
    y = (ctx.main.begin(x.view())
         .fetch(m("1"), m("K"))
         .collect(m("K / 16"), m("K % 16"))
         .contract_outer(w_trf, m("K / 32"), m("K % 32"))
         .contract_packet(m("1"))
         .contract_time(m("1"))
         .contract_lane(m("1"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("R")))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("I, R")])


@device(chip=1)
def small_i8(ctx: Context,
             x: HbmTensor[i8, Chip, m("A, E")],
             w: HbmTensor[i8, Chip, m("N, E")]) -> tuple[HbmTensor[i32, Chip, m("A, N")],
                                                         HbmTensor[i8, Chip, m("N")]]:
    """(x @ w.T in i32, the i8 wrap of sum_a sum_e (x[a, e] - ZERO_POINT) * w[n, e])."""
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, One, m("A, E")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, One, m("N, E")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N"), m("E"))
             .collect(m("N, E / 32"), m("E % 32"))
             .to_trf(m("N"), m("E")))
    y = (ctx.main.begin(x.view())
         .fetch(m("A"), m("E"))
         .collect(m("A, E / 32"), m("E % 32"))
         .contract_outer(w_trf, m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("N"), LaneMode.INTERLEAVED)
         .commit_trim(m("N"))
         .commit(m("A, N")))
    z = (ctx.main.begin(x.view())
         .fetch(m("A"), m("E"))
         .fetch_zero_point_sub(i9, ZERO_POINT)
         .collect(m("A, E / 32"), m("E % 32"))
         .contract_outer(w_trf, m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("1"))                         # A summed in time
         .contract_lane(m("N"), m("1 # 8"), LaneMode.SEQUENTIAL)
         .cast(i8, m("1 # 32"))
         .commit_trim(m("1 # 8"))
         .commit(m("N, 1 # 8")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, N")]), z.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("N")])


@device(chip=1)
def load_only(ctx: Context, w: HbmTensor[i8, Chip, m("N, E")]) -> None:
    """A kernel without results: it only loads the TRF."""
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, One, m("N, E")])
    (ctx.sub.begin(w.view())
     .fetch(m("N"), m("E"))
     .collect(m("N, E / 32"), m("E % 32"))
     .to_trf(m("N"), m("E")))
