"""Kernels that split a padded axis over time and packet (`R # 16 / 4`, `R # 16 % 4`) where
the axis is not a multiple of the split: |R| = 10 (the outer piece ragged, 0 4 8 and one
padding cell) and |S| = 6 (the outer piece a padding factor over S / 4). The reference's
book reads such a stream (vector-engine/vcg.md, reduce_time_packet): the VCG masks the
padded steps of the reduce."""

from npu_opt import *

axes(R=10, S=6, X=256)


@device(chip=1)
def padded_split_copy(ctx: Context, x: HbmTensor[f32, m("1"), m("X, R")]) -> HbmTensor[f32, m("1"), m("X, R")]:
    d = x.to_dm(ctx.tdma, DmTensor[f32, m("1"), m("1 # 2"), m("X"), m("R # 16")])
    out = (ctx.main.begin(d.view())
           .fetch(m("R # 16 / 4"), m("R # 16 % 4"))
           .collect(m("R # 16 / 4"), m("R # 16 % 4 # 8"))
           .commit_trim(m("R # 16 % 4"))
           .commit(m("R # 16 / 4, R # 16 % 4")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, m("1"), m("X, R")])


@device(chip=1)
def padded_split_copy_short(ctx: Context, x: HbmTensor[i32, m("1"), m("X, S")]) -> HbmTensor[i32, m("1"), m("X, S")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("X"), m("S # 16")])
    out = (ctx.main.begin(d.view())
           .fetch(m("S # 16 / 4"), m("S # 16 % 4"))
           .collect(m("S # 16 / 4"), m("S # 16 % 4 # 8"))
           .commit_trim(m("S # 16 % 4"))
           .commit(m("S # 16 / 4, S # 16 % 4")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("X, S")])


@device(chip=1)
def padded_split_sum(ctx: Context, x: HbmTensor[f32, m("1"), m("X, R")]) -> HbmTensor[f32, m("1"), m("X")]:
    d = x.to_dm(ctx.tdma, DmTensor[f32, m("1"), m("1 # 2"), m("X"), m("R # 16")])
    out = (ctx.main.begin(d.view())
           .fetch(m("R # 16 / 4"), m("R # 16 % 4"))
           .collect(m("R # 16 / 4"), m("R # 16 % 4 # 8"))
           .vector_init().vector_intra_slice_tag(TagMode.ZERO)
           .vector_narrow_trim(m("R # 16 % 4"))
           .vector_intra_slice_reduce(m("R"), m("1"), m("1 # 4"), IntraSliceReduceOpF32.ADD)
           .vector_widen_pad(m("1 # 8")).vector_final()
           .commit_trim(m("1 # 2")).commit(m("1 # 2")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, m("1"), m("X")])


axes(P=3, Q=4, T=10, Y=64)


@device(chip=1)
def padded_reduce_kept_outward(ctx: Context, x: HbmTensor[i32, m("1"), m("Y, P, T, Q")]
                               ) -> HbmTensor[i32, m("1"), m("Y, P, Q")]:
    """The layout VE-REDUCE-1's help gives for `T # 12 / 4, P, T # 12 % 4`: the kept P outward,
    the two digits the padding of T cuts together (kd-padded-reduce's accepted neighbour)."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("Y # 256"), m("P, T # 12, Q")])
    out = (ctx.main.begin(d.view())
           .fetch(m("P, T # 12 / 4, T # 12 % 4"), m("Q"))
           .collect(m("P, T # 12 / 4, T # 12 % 4"), m("Q # 8"))
           .vector_init().vector_intra_slice_tag(TagMode.ZERO)
           .vector_narrow_trim(m("Q"))
           .vector_intra_slice_reduce(m("T"), m("P"), m("Q"), IntraSliceReduceOpI32.ADD_SAT)
           .vector_widen_pad(m("Q # 8")).vector_final()
           .commit_trim(m("Q")).commit(m("P, Q")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("Y, P, Q")])


@device(chip=1)
def padded_digits_together(ctx: Context, x: HbmTensor[i32, m("1"), m("Y, T # 12 / 4, T # 12 % 4, P, Q")]
                           ) -> HbmTensor[i32, m("1"), m("Y, T # 12 / 4, T # 12 % 4, P, Q")]:
    """DMA-4's help for a padded axis split around another: its digits side by side move."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("Y # 256"), m("T # 12 / 4, T # 12 % 4, P, Q")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("Y, T # 12 / 4, T # 12 % 4, P, Q")])


@device(chip=1)
def padded_whole(ctx: Context, x: HbmTensor[i32, m("1"), m("Y, P, T # 12, Q")]
                 ) -> HbmTensor[i32, m("1"), m("Y, P, T # 12, Q")]:
    """DMA-4's other help: the axis padded whole, no split digits."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1 # 2"), m("Y # 256"), m("P, T # 12, Q")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("Y, P, T # 12, Q")])


axes(B=16, C4=4, C2=2, C3=3)


@device(chip=1)
def padded_row_half(ctx: Context, x: HbmTensor[i8, m("1"), m("B, C4 # 8")]) -> HbmTensor[i8, m("1"), m("B, C4 # 8")]:
    """An i8 row of 4 live bytes padded to 8 on both sides: the padded row moves whole (8-byte
    units), as the reference's sequencer examples do; the padding factors (4 | 8)."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1 # 2"), m("1 # 256"), m("B, C4 # 8")])
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def padded_row_quarter(ctx: Context, x: HbmTensor[i8, m("1"), m("B, C2 # 8")]) -> HbmTensor[i8, m("1"), m("B, C2 # 8")]:
    """Two live bytes of eight."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1 # 2"), m("1 # 256"), m("B, C2 # 8")])
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def padded_row_ragged(ctx: Context, x: HbmTensor[i8, m("1"), m("B, C3 # 8")]) -> HbmTensor[i8, m("1"), m("B, C3 # 8")]:
    """Three live bytes of eight: padding (2 steps) over a ragged `C3 # 4`, one padded row."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, m("1"), m("1 # 2"), m("1 # 256"), m("B, C3 # 8")])
    return d.to_hbm(ctx.tdma)
