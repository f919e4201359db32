"""VRF test kernels: a per-column operand stored with `to_vrf`, then read by one op of a
Vector Engine pass over an (8, 64) stream (rows A, columns E)."""

from __future__ import annotations

from npu_opt import *  # noqa: F403

axes(A=8, E=64, W=4096)  # noqa: F405

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405


def _store(ctx, b, dtype, element):
    b = b.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("E")])  # noqa: F405
    return (ctx.sub.begin(b.view())
            .fetch(m("E / 8"), m("E % 8"))  # noqa: F405
            .collect(m("E / 8"), m("E % 8"))  # noqa: F405
            .to_vrf(element))


def rf_kernel(dtype, method, op, element=None, name="vrf_chain", float_path=False):
    """y[a, e] = op(x[a, e], b[e]) with b in the VRF (`element` defaults to `E`)."""

    def body(ctx, x, b):
        b_vrf = _store(ctx, b, dtype, element or m("E"))  # noqa: F405
        x = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
        if float_path:
            s = (ctx.main.begin(x.view()).fetch(m("A, E / 4"), m("E % 4"))  # noqa: F405
                 .collect(m("A, E / 4"), m("E % 4 # 8")).vector_init()  # noqa: F405
                 .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_trim(m("E % 4")))  # noqa: F405
            s = getattr(s, method)(op, b_vrf).vector_widen_pad(m("E % 4 # 8"))  # noqa: F405
            trim = m("E % 4")  # noqa: F405
        else:
            s = (ctx.main.begin(x.view()).fetch(m("A, E / 8"), m("E % 8"))  # noqa: F405
                 .collect(m("A, E / 8"), m("E % 8")).vector_init()  # noqa: F405
                 .vector_intra_slice_tag(TagMode.ZERO))  # noqa: F405
            s = getattr(s, method)(op, b_vrf)
            trim = m("E % 8")  # noqa: F405
        y = s.vector_final().commit_trim(trim).commit()
        return y.to_hbm(ctx.tdma)

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[dtype, Chip, m("A, E")],  # noqa: F405
                            "b": HbmTensor[dtype, Chip, m("E")],  # noqa: F405
                            "return": HbmTensor[dtype, Chip, m("A, E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405


@device(chip=1)  # noqa: F405
def row_scale_kernel(ctx: Context, x: HbmTensor[f32, Chip, m("A, E")],  # noqa: F405
                     s: HbmTensor[f32, Chip, m("A")]) -> HbmTensor[f32, Chip, m("A, E")]:  # noqa: F405
    """y[a, e] = x[a, e] * s[a]: a per-row VRF operand broadcast along the packet; the
    operand itself is doubled by a Vector Engine pass before `to_vrf`."""
    s = s.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A")])  # noqa: F405
    s_vrf = (ctx.sub.begin(s.view()).fetch(m("1"), m("A")).collect(m("1"), m("A"))  # noqa: F405
             .vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
             .vector_clip(ClipBinaryOpF32.ADD, 0.5)  # noqa: F405
             .vector_final().to_vrf(m("A")))  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    y = (ctx.main.begin(x.view()).fetch(m("A, E / 4"), m("E % 4"))  # noqa: F405
         .collect(m("A, E / 4"), m("E % 4 # 8")).vector_init()  # noqa: F405
         .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_trim(m("E % 4"))  # noqa: F405
         .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL1), s_vrf)  # noqa: F405
         .vector_widen_pad(m("E % 4 # 8")).vector_final().commit_trim(m("E % 4")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


@device(chip=1)  # noqa: F405
def two_vrf_kernel(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")], b: HbmTensor[i32, Chip, m("E")],  # noqa: F405
                   c: HbmTensor[i32, Chip, m("E")]) -> HbmTensor[i32, Chip, m("A, E")]:  # noqa: F405
    """y = min((x + b) * c, b): one pass reading two VRF tensors, one of them twice."""
    b_vrf, c_vrf = _store(ctx, b, i32, m("E")), _store(ctx, c, i32, m("E"))  # noqa: F405
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    y = (ctx.main.begin(x.view()).fetch(m("A, E / 8"), m("E % 8")).collect(m("A, E / 8"), m("E % 8"))  # noqa: F405
         .vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
         .vector_fxp(FxpBinaryOp.ADD_FXP, b_vrf)  # noqa: F405
         .vector_fxp(FxpBinaryOp.MUL_INT, c_vrf)  # noqa: F405
         .vector_clip(ClipBinaryOpI32.MIN, b_vrf)  # noqa: F405
         .vector_final().commit_trim(m("E % 8")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)
