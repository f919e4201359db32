"""A rolled loop whose body reads a VRF tensor stored before the loop and stores one of its own
after that read: the outer one must keep its words for every iteration."""

from npu_opt import *  # noqa: F403

axes(VP=4, VA=8, VE=64)  # noqa: F405

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405


def _store(ctx, v):
    v = v.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("VE")])  # noqa: F405
    return ctx.sub.begin(v.view()).fetch(m("VE / 8"), m("VE % 8")).collect(m("VE / 8"), m("VE % 8")).to_vrf(m("VE"))  # noqa: F405


def _min_into(ctx, page, operand, out, i):
    y = (ctx.main.begin(page.view()).fetch(m("VA, VE / 8"), m("VE % 8"))  # noqa: F405
         .collect(m("VA, VE / 8"), m("VE % 8")).vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
         .vector_clip(ClipBinaryOpI32.MIN, operand).vector_final().commit_trim(m("VE % 8")).commit())  # noqa: F405
    y.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("VP"), 1, m("1 #{!} 4, VA, VE"), i))  # noqa: F405


@device(chip=1)  # noqa: F405
def two_mins(ctx: Context, x: HbmTensor[i32, Chip, m("VP, VA, VE")], b: HbmTensor[i32, Chip, m("VE")],  # noqa: F405
             c: HbmTensor[i32, Chip, m("VE")]) -> tuple[HbmTensor[i32, Chip, m("VP, VA, VE")],  # noqa: F405
                                                     HbmTensor[i32, Chip, m("VP, VA, VE")]]:  # noqa: F405
    """min(x, b) and min(x, c) page by page; b is stored before the loop, c in the body."""
    b_vrf = _store(ctx, b)
    out_b, out_c = HbmTensor[i32, Chip, m("VP, VA, VE")].new(), HbmTensor[i32, Chip, m("VP, VA, VE")].new()  # noqa: F405
    for i in ctx.loop(4):
        page = x.view().tile(m("VP"), 1, m("1 # 4, VA, VE"), i).to_dm(  # noqa: F405
            ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("VA, VE")])  # noqa: F405
        _min_into(ctx, page, b_vrf, out_b, i)
        _min_into(ctx, page, _store(ctx, c), out_c, i)
    return out_b, out_c
