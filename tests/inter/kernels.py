"""Test kernels of the inter-slice reducer: a [slice, time] layout reduced across slices,
in the InterFirst and IntraFirst orders (their own kernels, small enough for the suite)."""

from __future__ import annotations

from npu_opt import *

axes(A=512, R=4, W=64, X=4, V=4, S=2)

Chip = m("1")
Cluster = m("1 # 2")


def inter_first(dt, op, slice_="A / 8, R", elem="A % 8", time="1", out_slice="A / 8, 1 # 4", out_time="1",
                hbm="A / 8, R, A % 8", out_hbm="A", out_elem="A % 8"):
    """`vector_init -> vector_inter_slice_reduce -> vector_final` on a DM tensor laid out
    over `slice_`, committed to `out_slice`."""

    def kernel(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[dt, Chip, Cluster, m(slice_), m(elem)])
        y = (ctx.main.begin(x.view())
             .fetch(m(time), m("A % 8"))
             .collect(m(time), m("A % 8"))
             .vector_init()
             .vector_inter_slice_reduce(m(out_slice), m(out_time), op)
             .vector_final()
             .commit_trim(m("A % 8"))
             .commit(m(out_elem)))
        return y.to_hbm(ctx.tdma, HbmTensor[dt, Chip, m(out_hbm)])

    kernel.__annotations__ = {"ctx": Context, "x": HbmTensor[dt, Chip, m(hbm)], "return": HbmTensor[dt, Chip, m(out_hbm)]}
    return device(chip=1)(kernel)


@device(chip=1)
def inter_then_chain(ctx: Context, x: HbmTensor[i32, Chip, m("A / 8, R, A % 8")]) -> HbmTensor[i32, Chip, m("A")]:
    """InterFirst, then the intra-slice chain: max over R, then + 100 (saturating)."""
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A / 8, R"), m("A % 8")])
    y = (ctx.main.begin(x.view())
         .fetch(m("1"), m("A % 8"))
         .collect(m("1"), m("A % 8"))
         .vector_init()
         .vector_inter_slice_reduce(m("A / 8, 1 # 4"), m("1"), InterSliceReduceOpI32.MAX)
         .vector_intra_slice_tag(TagMode.ZERO)
         .vector_fxp(FxpBinaryOp.ADD_FXP_SAT, 100)
         .vector_final()
         .commit_trim(m("A % 8"))
         .commit(m("A % 8")))
    return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])


@device(chip=1)
def chain_then_inter(ctx: Context, x: HbmTensor[f32, Chip, m("A / 8, R, A % 8")]) -> HbmTensor[f32, Chip, m("A")]:
    """IntraFirst: clip at 0 (ReLU) in the chain, then the f32 sum over R."""
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, m("A / 8, R"), m("A % 8")])
    y = (ctx.main.begin(x.view())
         .fetch(m("1"), m("A % 8"))
         .collect(m("1"), m("A % 8"))
         .vector_init()
         .vector_intra_slice_tag(TagMode.ZERO)
         .vector_clip(ClipBinaryOpF32.MAX, 0.0)
         .vector_inter_slice_reduce(m("A / 8, 1 # 4"), m("1"), InterSliceReduceOpF32.ADD)
         .vector_final()
         .commit_trim(m("A % 8"))
         .commit(m("A % 8")))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("A")])


def second_reduce(how):
    """InterFirst, the chain to Fxp, then a second inter-slice reduce on the Fxp stream: "called"
    as the first one, with "no arguments", or on the stream after a call "consumed" it."""

    def kernel(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A / 8, R"), m("A % 8")])
        s = (ctx.main.begin(x.view()).fetch(m("1"), m("A % 8")).collect(m("1"), m("A % 8")).vector_init()
             .vector_inter_slice_reduce(m("A / 8, 1 # 4"), m("1"), InterSliceReduceOpI32.MAX)
             .vector_intra_slice_tag(TagMode.ZERO).vector_fxp(FxpBinaryOp.ADD_FXP_SAT, 100))
        if how == "consumed":
            s.vector_final()
        args = () if how == "no arguments" else (m("A / 8, 1 # 4"), m("1"), InterSliceReduceOpI32.MAX)
        y = s.vector_inter_slice_reduce(*args).vector_final().commit_trim(m("A % 8")).commit(m("A % 8"))
        return y.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])

    kernel.__annotations__ = {"ctx": Context, "x": HbmTensor[i32, Chip, m("A / 8, R, A % 8")],
                              "return": HbmTensor[i32, Chip, m("A")]}
    return device(chip=1)(kernel)
