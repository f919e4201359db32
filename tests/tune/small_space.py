"""A small tune file for the tuner's tests: one 256 x 256 i8 GEMM pass, two levers.

`loads`: the weights are moved into DM that many times (the extra copies are wasted
work the schedule must see); `packet`: the contraction packet in i8 (16 is half a flit,
which contract_outer refuses). `SPACE` checks against a numpy oracle; `WRONG` against a
wrong one; `BROKEN`'s factory raises for one point; `ALIKE`'s first lever changes nothing."""

import numpy as np

from npu_opt import *
from npu_opt.tune import Space

axes(M=256, N=256, K=64)
Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 16, N / 16")


def make(loads: int = 1, packet: int = 64):
    @device(chip=1)
    def small_gemm(ctx: Context,
                   a: HbmTensor[i8, Chip, m("M, K")],
                   w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
        a_dm = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 16, K")])
        for _ in range(loads):
            w_dm = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 16, K")])
        trf = (ctx.sub.begin(w_dm.view())
               .fetch(m("N % 8, N / 8 % 2"), m("K"))
               .collect(m("N % 8, N / 8 % 2, K / 32"), m("K % 32"))
               .to_trf(m("N % 8"), m("N / 8 % 2, K")))
        out = (ctx.main.begin(a_dm.view())
               .fetch(m("M % 16, N / 8 % 2"), m("K"))
               .collect(m("M % 16, N / 8 % 2, K / 32"), m("K % 32"))
               .contract_outer(trf, m(f"M % 16, N / 8 % 2, K / {packet}"), m(f"K % {packet}"))
               .contract_packet(m("1"))
               .contract_time(m("M % 16, N / 8 % 2"))
               .contract_lane(m("M % 16, N / 8 % 2"), m("N % 8"), LaneMode.INTERLEAVED)
               .commit_trim(m("N % 8"))
               .commit(m("M % 16, N % 16")))
        return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
    return small_gemm


def inputs(rng):
    return (rng.integers(-128, 128, (256, 64), dtype=np.int8), rng.integers(-128, 128, (256, 64), dtype=np.int8))


def oracle(a, w):
    return (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32)


def wrong(a, w):
    return oracle(a, w) + 1


def broken(loads: int = 1, packet: int = 64):
    if loads == 2:
        raise ValueError("two loads are not supported by this factory")
    return make(loads, packet)


SPACE = Space(make, {"loads": [1, 2], "packet": [16, 32, 64]}, inputs=inputs, oracle=oracle)
WRONG = Space(make, {"loads": [1], "packet": [32, 64]}, inputs=inputs, oracle=wrong)
BROKEN = Space(broken, {"loads": [2, 1], "packet": [64]})


def alike(label: str = "a", packet: int = 64):
    """`label` changes nothing: the two labels of one packet trace to the same kernel."""
    return make(1, packet)


ALIKE = Space(alike, {"label": ["a", "b"], "packet": [32, 64]})
