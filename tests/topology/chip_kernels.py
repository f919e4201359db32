"""Own kernels for `@device(chip=N, pe=P)` (docs/machine/topology.md)."""

from npu_opt import *

axes(C=2, Q=4, A=256, B=64, R=256, W=64)


@device(chip=2)
def two_chip_widen(ctx: Context, x: HbmTensor[i8, m("C"), m("A, B")]) -> HbmTensor[i32, m("C"), m("B, A")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("C"), m("1 # 2"), m("A / 2 # 256"), m("A % 2, B")])
    y = (ctx.main.begin(d.view())
         .fetch(m("A % 2"), m("B"))
         .fetch_cast(i32)
         .collect(m("A % 2, B / 8"), m("B % 8"))
         .commit_trim(m("B % 8"))
         .commit(m("A % 2, B")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, m("C"), m("B, A")])


@device(chip=4)
def four_chip_copy(ctx: Context, x: HbmTensor[i8, m("Q"), m("A, B")]) -> HbmTensor[i8, m("Q"), m("B, A")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("Q"), m("A / 128"), m("A % 128 # 256"), m("B")])
    return d.to_hbm(ctx.tdma, HbmTensor[i8, m("Q"), m("B, A")])


@device(chip=2)
def two_chip_replicated(ctx: Context, x: HbmTensor[i8, m("1 # 2"), m("A, B")]) -> HbmTensor[i8, m("1 # 2"), m("A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1 # 2"), m("1 # 2"), m("A"), m("B")])
    return d.to_hbm(ctx.tdma, HbmTensor[i8, m("1 # 2"), m("A, B")])


def _pe_copy(pe: int, slices: str, per_slice: str):
    @device(pe=pe)
    def pe_copy(ctx: Context, x: HbmTensor[i8, m("1"), m("R, W")]) -> HbmTensor[i8, m("1"), m("R, W")]:
        d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1"), m(slices), m(per_slice)])
        return d.to_hbm(ctx.tdma, HbmTensor[i8, m("1"), m("R, W")])
    return pe_copy


one_pe = _pe_copy(1, "R / 4", "R % 4, W")
two_pe = _pe_copy(2, "R / 2", "R % 2, W")
four_pe = _pe_copy(4, "R", "W")
two_pe_too_wide = _pe_copy(2, "R", "W")          # 256 slices on 2 PEs: SPACE-5


@device(pe=4)
def four_pe_two_clusters(ctx: Context, x: HbmTensor[i8, m("1"), m("R, W")]) -> HbmTensor[i8, m("1"), m("R, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1 # 2"), m("R"), m("W")])   # 2 clusters on 4 PEs: SPACE-5
    return d.to_hbm(ctx.tdma, HbmTensor[i8, m("1"), m("R, W")])


@device(pe=8)
def eight_pe_two_clusters(ctx: Context, x: HbmTensor[i8, m("1"), m("R, W")]) -> HbmTensor[i8, m("1"), m("R, W")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("R / 128"), m("R % 128 # 256"), m("W")])
    return d.to_hbm(ctx.tdma, HbmTensor[i8, m("1"), m("R, W")])


@device(chip=3)
def three_chips(ctx: Context, x: HbmTensor[i8, m("1 # 3"), m("A, B")]) -> HbmTensor[i8, m("1 # 3"), m("A, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1 # 3"), m("1 # 2"), m("A"), m("B")])
    return d.to_hbm(ctx.tdma, HbmTensor[i8, m("1 # 3"), m("A, B")])


@device(chip=2)
def chip_axis_split(ctx: Context, x: HbmTensor[i8, m("A / 128"), m("A % 128, B")]) -> HbmTensor[i8, m("A / 128"), m("A % 128, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("A / 128"), m("1 # 2"), m("A % 128 # 256"), m("B")])
    return d.to_hbm(ctx.tdma)
