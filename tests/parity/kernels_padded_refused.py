"""Padded layouts npu-opt refuses, each with the code its test pins: two furiosa-opt accepts
(kd-padded-dma, kd-padded-reduce), one it refuses too (`split_shares_packet`), one from another
layout (`dma_into_a_split_around_a_kept_axis`). A short packet padded to 8 bytes now compiles
(tests/ir/test_fetch_over_read.py), as does a DMA within one split layout (`dma_around_a_kept_axis`)."""

from npu_opt import *

axes(P=3, Q=4, T=10, Y=64, U=2, V=5, Z=3)


@device(chip=1)
def dma_splits_a_padded_axis(ctx: Context, x: HbmTensor[i32, m("1"), m("U, Y, P")]) -> HbmTensor[i32, m("1"), m("U, Y, P")]:
    """The DM element splits P # 4 into two digits of two i32 each (8 bytes): DMA-5."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("U"), m("Y # 256"), m("P # 4 / 2, P # 4 % 2")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("U, Y, P")])


@device(chip=1)
def reduce_around_a_kept_axis(ctx: Context,
                              d: DmTensor[i32, m("1"), m("1 # 2"), m("Y # 256"), m("T # 12 / 4, P, T # 12 % 4, Q")]
                              ) -> HbmTensor[i32, m("1"), m("Y, P, Q")]:
    """The reduced axis T # 12 is split around the kept P in time: VE-REDUCE-1. The tensor is
    a DM parameter (a DMA fills that layout only from the same layout: `dma_around_a_kept_axis`)."""
    out = (ctx.main.begin(d.view())
           .fetch(m("T # 12 / 4, P, T # 12 % 4"), m("Q"))
           .collect(m("T # 12 / 4, P, T # 12 % 4"), m("Q # 8"))
           .vector_init().vector_intra_slice_tag(TagMode.ZERO)
           .vector_narrow_trim(m("Q"))
           .vector_intra_slice_reduce(m("T"), m("P"), m("Q"), IntraSliceReduceOpI32.ADD_SAT)
           .vector_widen_pad(m("Q # 8")).vector_final()
           .commit_trim(m("Q")).commit(m("P, Q")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("Y, P, Q")])


axes(S=19, H=4)


@device(chip=1)
def split_shares_packet(ctx: Context):
    """A padded axis shares the packet with another (`S # 24 % 2, H`): the split's back half
    folded into the time has no factor form; the split's own rule refuses it at its line
    (VE-SPLIT-2), as the reference refuses such a reduce (not a bare mapping error without a location)."""
    d = DmTensor[f32, m("1"), m("1 # 2"), m("Y # 256"), m("S # 24 / 2, S # 24 % 2, H")].new()
    (ctx.main.begin(d.view())
     .fetch(m("S # 24 / 2"), m("S # 24 % 2, H"))
     .collect(m("S # 24 / 2"), m("S # 24 % 2, H"))
     .vector_init()
     .vector_intra_slice_tag(TagMode.ZERO)
     .vector_narrow_split(m("S # 24"), m("H"))  # VE-SPLIT-2
     .vector_intra_slice_reduce(m("S"), m("1"), m("H"), IntraSliceReduceOpF32.ADD)
     .vector_widen_pad(m("1 # 8"))
     .vector_final()
     .commit_trim(m("1 # 2"))
     .commit(m("1 # 2")))


@device(chip=1)
def dma_around_a_kept_axis(ctx: Context,
                           x: HbmTensor[i32, m("1"), m("Y, T # 12 / 4, P, T # 12 % 4, Q")]
                           ) -> HbmTensor[i32, m("1"), m("Y, T # 12 / 4, P, T # 12 % 4, Q")]:
    """DM in HBM's own padded layout, T # 12 split around P: each run of the transfer holds
    padding between live cells, which the other side holds at the same places; the DMA moves
    the run whole, padding onto padding (it was DMA-4, and before that an internal error)."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("Y # 256"), m("T # 12 / 4, P, T # 12 % 4, Q")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("Y, T # 12 / 4, P, T # 12 % 4, Q")])


@device(chip=1)
def dma_into_a_split_around_a_kept_axis(ctx: Context, x: HbmTensor[i32, m("1"), m("Y, P, T, Q")]
                                        ) -> HbmTensor[i32, m("1"), m("Y, P, T, Q")]:
    """The same DM layout from HBM in the natural order: no strided loop walks the split run
    over T's live cells only: DMA-4."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("Y # 256"), m("T # 12 / 4, P, T # 12 % 4, Q")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("Y, P, T, Q")])
