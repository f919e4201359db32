"""Kernels whose DMA into DM splits a padded axis between Slice and Element with the two
digit ranges side by side (`R # 32 / 8` over Slice, `R # 32 % 8` in the element) from an HBM
source that already holds the padded order: the workaround docs/changes.md gives for
kd-padded-dma, and the layout of the reference's book example reduce_slice_time_packet
(vector-engine/intra-slice-reduce.md). |R13| = 13 leaves slice 1 five live cells; |R12| = 12
leaves it four, so each packet of four is full or empty and the reduce can count it."""

from npu_opt import *

axes(R13=13, R12=12)


@device(chip=1)
def slices_round_trip(ctx: Context, x: HbmTensor[i32, m("1"), m("R13 # 32 / 8, R13 # 32 % 8")]
                      ) -> HbmTensor[i32, m("1"), m("R13 # 32 / 8, R13 # 32 % 8")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("R13 # 32 / 8 # 256"), m("R13 # 32 % 8")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("R13 # 32 / 8, R13 # 32 % 8")])


@device(chip=1)
def slices_min(ctx: Context, x: HbmTensor[i32, m("1"), m("R12 # 32 / 8, R12 # 32 % 8")]
               ) -> HbmTensor[i32, m("1"), m("R12 # 32 / 8")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("R12 # 32 / 8 # 256"), m("R12 # 32 % 8")])
    y = (ctx.main.begin(d.view()).fetch(m("R12 # 32 / 4 % 2"), m("R12 # 32 % 4"))
         .collect(m("R12 # 32 / 4 % 2"), m("R12 # 32 % 4 # 8"))
         .vector_init().vector_intra_slice_tag(TagMode.ZERO)
         .vector_narrow_trim(m("R12 # 32 % 4"))
         .vector_intra_slice_reduce(m("R12"), m("1"), m("1 # 4"), IntraSliceReduceOpI32.MIN)
         .vector_widen_pad(m("1 # 8")).vector_final()
         .commit_trim(m("1 # 2")).commit(m("1 # 2")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("R12 # 32 / 8")])
