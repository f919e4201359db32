"""Kernels for the Contraction Engine rule tests (docs/machine/contraction.md) that exist nowhere else.

`RULES` is one module with one kernel per rule that examples/ has no fixture for (and
the valid `base` and `time_padded_kept`); each refused kernel marks the line its
diagnostic must point at with `# <--`. The examples and the refused fixtures of
examples/ are loaded from their files through `tests.kernel_files`.
"""

from __future__ import annotations

from npu_opt.device import DeviceKernel
from tests.kernel_files import load_source

__all__ = ["RULES", "rule"]


def rule(name: str) -> DeviceKernel:
    """The kernel `name` of `RULES` (compiled once per test session, file `<kernel:contract-rules>`)."""
    return getattr(load_source(RULES, "contract-rules"), name)


RULES = '''\
from npu_opt import *

axes(A=8, E=32, R=8, O=2, G=4, H=8, F=6, N=16, S=256, T=64, P=32)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")


def weights(ctx, w, slice_=Slice):
    """The TRF operand of most kernels: lane R, element E (i8, 32 bytes per lane)."""
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, slice_, m("R, E")])
    return ctx.sub.begin(w.view()).fetch(m("R"), m("E")).collect(m("R"), m("E")).to_trf(m("R"), m("E"))


def stream(ctx, x):
    """The streamed operand of most kernels: time A, one i8 flit of E."""
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])
    return ctx.main.begin(x.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))


@device(chip=1)
def base(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
         w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def space4_slices(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    w_trf = weights(ctx, w, m("1 # 128"))
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A"), m("E"))                 # <-- SPACE-4
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def outer3_half_flit(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                     w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    w_trf = weights(ctx, w)
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A"), m("E % 16"))            # <-- OUTER-3
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def outer7_bcast_outermost(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                           w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    w_trf = weights(ctx, w)
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("2, A"), m("E"))              # <-- OUTER-7
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def outer8_spread_trf(ctx: Context, x: HbmTensor[i8, Chip, m("A, G, H")],
                      w: HbmTensor[i8, Chip, m("H, G")]) -> HbmTensor[i32, Chip, m("A")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, G, H")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("H, G")])
    w_trf = ctx.sub.begin(w.view()).fetch(m("1"), m("H, G")).collect(m("1"), m("H, G")).to_trf(m("1"), m("H, G"))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("G, H")).collect(m("A"), m("G, H"))
         .contract_outer(w_trf, m("A"), m("G, H"))              # <-- OUTER-8
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)
         .commit_trim(m("1 # 2"))
         .commit(m("A, 1 # 2")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])


@device(chip=1)
def outer9_rows_not_walked(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                           w: HbmTensor[i8, Chip, m("O, E")]) -> HbmTensor[i32, Chip, m("A")]:
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("O, E")])
    w_trf = ctx.sub.begin(w.view()).fetch(m("O"), m("E")).collect(m("O"), m("E")).to_trf(m("1"), m("O, E"))
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A"), m("E"))                 # <-- OUTER-9
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)
         .commit_trim(m("1 # 2"))
         .commit(m("A, 1 # 2")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])


@device(chip=1)
def outer9_lane_in_time(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                        w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    w_trf = weights(ctx, w)
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A, R"), m("E"))              # <-- OUTER-9
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def outer10_slice_digit(ctx: Context, x: HbmTensor[i8, Chip, m("S, A, E")],
                        w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("S, A, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("S"), m("A, E")])
    w_trf = weights(ctx, w, m("S"))
    y = (ctx.main.begin(x.view()).fetch(m("A"), m("E")).collect(m("A"), m("E"))
         .contract_outer(w_trf, m("A, S % 2"), m("E"))          # <-- OUTER-10
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("S, A, R")])


@device(chip=1)
def outer11_long_walk(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                      w: HbmTensor[i8, Chip, m("N, E")]) -> HbmTensor[i32, Chip, m("A")]:
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N, E")])
    w_trf = ctx.sub.begin(w.view()).fetch(m("N"), m("E")).collect(m("N"), m("E")).to_trf(m("1"), m("N, E"))
    y = (stream(ctx, x)
         .contract_outer(w_trf, m("A, N / 8, 2, N / 4 % 2, 2, N / 2 % 2, 2, N % 2, 2"), m("E"))   # <-- OUTER-11
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)
         .commit_trim(m("1 # 2"))
         .commit(m("A, 1 # 2")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])


@device(chip=1)
def packet2_wide(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                 w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1 # 64"))                          # <-- PACKET-2
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def packet3_three(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1 # 3"))                           # <-- PACKET-3
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def packet4_no_tree(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                    w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("E / 2 % 4"))                       # <-- PACKET-4
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def time1_foreign(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("R"))                                 # <-- TIME-1
         .contract_lane(m("R"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def time3_broadcast(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                    w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A, 2"))                              # <-- TIME-3
         .contract_lane(m("A, 2"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def time3_padding(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A # 16"))                            # <-- TIME-3
         .contract_lane(m("A # 16"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def time3_padded_own(ctx: Context, x: HbmTensor[i8, Chip, m("F, E")],
                     w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("F, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F, E")])
    y = (ctx.main.begin(x.view()).fetch(m("F"), m("E")).collect(m("F"), m("E"))
         .contract_outer(weights(ctx, w), m("F"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("F # 8"))                             # <-- TIME-3
         .contract_lane(m("F # 8"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("F # 8, R")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("F, R")])


@device(chip=1)
def time4_unpadded(ctx: Context, x: HbmTensor[i8, Chip, m("F, E")],
                   w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("F, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F, E")])
    y = (ctx.main.begin(x.view()).fetch(m("F # 8"), m("E")).collect(m("F # 8"), m("E"))
         .contract_outer(weights(ctx, w), m("F # 8"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("F"))                                 # <-- TIME-4
         .contract_lane(m("F"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("F, R")])


@device(chip=1)
def time_padded_kept(ctx: Context, x: HbmTensor[i8, Chip, m("F, E")],
                     w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("F, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("F, E")])
    y = (ctx.main.begin(x.view()).fetch(m("F # 8"), m("E")).collect(m("F # 8"), m("E"))
         .contract_outer(weights(ctx, w), m("F # 8"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("F # 8"))                             # accepted: the padded extent is kept
         .contract_lane(m("F # 8"), m("R"), LaneMode.INTERLEAVED)
         .commit_trim(m("R"))
         .commit(m("F # 8, R")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("F, R")])


@device(chip=1)
def lane2_wide(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
               w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R # 16"), LaneMode.INTERLEAVED)   # <-- LANE-2
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def lane3_packet(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                 w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A"), m("1 # 8"), LaneMode.INTERLEAVED)    # <-- LANE-3
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def lane4_columns(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
                  w: HbmTensor[i8, Chip, m("R, E")]) -> None:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("E / 8"))                           # d = 3: four columns
         .contract_time(m("A"))
         .contract_lane(m("A"), m("R"), LaneMode.INTERLEAVED)   # <-- LANE-4
         .commit_trim(m("R"))
         .commit(m("A, E / 8, R")))


@device(chip=1)
def lane5_time(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")],
               w: HbmTensor[i8, Chip, m("R, E")]) -> HbmTensor[i32, Chip, m("A, R")]:
    y = (stream(ctx, x)
         .contract_outer(weights(ctx, w), m("A"), m("E"))
         .contract_packet(m("1"))
         .contract_time(m("A"))
         .contract_lane(m("A / 2, 2"), m("R"), LaneMode.INTERLEAVED)   # <-- LANE-5
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A, R")])


@device(chip=1)
def lane6_interleaved(ctx: Context,
                      x: HbmTensor[bf16, Chip, m("T, A, P")],
                      w: HbmTensor[bf16, Chip, m("R, T")]) -> HbmTensor[f32, Chip, m("A, P, R")]:
    x = x.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("T, A, P")])
    w = w.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("R, T")])
    w_trf = (ctx.sub.begin(w.view()).fetch(m("R"), m("T"))
             .collect(m("R, T / 16"), m("T % 16")).to_trf(m("R"), m("T")))
    y = (ctx.main.begin(x.view()).fetch(m("T, A"), m("P"))
         .collect(m("T, A, P / 16"), m("P % 16"))
         .contract_outer(w_trf, m("T, A"), m("P"))
         .contract_packet(m("P"))
         .contract_time(m("A"))
         .contract_lane(m("A, P"), m("R"), LaneMode.INTERLEAVED)    # <-- LANE-6
         .commit_trim(m("R"))
         .commit())
    return y.to_hbm(ctx.tdma)
'''
