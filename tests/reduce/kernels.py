"""Intra-slice reduce test kernels over an (8, 64) tensor x[A, E]."""

from __future__ import annotations

from npu_opt import *  # noqa: F403

axes(A=8, E=64, B=4)  # noqa: F405

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405


def row_kernel(dtype, op, name="row_reduce", out_packet="1 # 4"):
    """y[a] = op over e of x[a, e]: E / 4 in time and E % 4 in the packet, tree then time."""

    def body(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
        y = (ctx.main.begin(x.view()).fetch(m("A, E / 4"), m("E % 4"))  # noqa: F405
             .collect(m("A, E / 4"), m("E % 4 # 8")).vector_init()  # noqa: F405
             .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_trim(m("E % 4"))  # noqa: F405
             .vector_intra_slice_reduce(m("E"), m("A"), m(out_packet), op)  # noqa: F405
             .vector_widen_pad(m("1 # 8")).vector_final()  # noqa: F405
             .commit_trim(m("1 # 2")).commit(m("A, 1 # 2")))  # noqa: F405
        return y.to_hbm(ctx.tdma, HbmTensor[dtype, Chip, m("A")])  # noqa: F405

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[dtype, Chip, m("A, E")],  # noqa: F405
                            "return": HbmTensor[dtype, Chip, m("A")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405


def column_kernel(dtype, op, out_time=None, out_packet=None, time=None, name="column_reduce"):
    """y[e] = op over a of x[a, e]: A in time (innermost by default), the packet kept; the
    mappings are given as text."""
    time = m(time or "E / 4, A")  # noqa: F405
    out_time, out_packet = m(out_time or "E / 4"), m(out_packet or "E % 4")  # noqa: F405

    def body(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
        y = (ctx.main.begin(x.view()).fetch(time, m("E % 4"))  # noqa: F405
             .collect(time, m("E % 4 # 8")).vector_init()  # noqa: F405
             .vector_intra_slice_tag(TagMode.ZERO).vector_narrow_trim(m("E % 4"))  # noqa: F405
             .vector_intra_slice_reduce(m("A"), out_time, out_packet, op)  # noqa: F405
             .vector_widen_pad(m("E % 4 # 8")).vector_final()  # noqa: F405
             .commit_trim(m("E % 4")).commit(m("E")))  # noqa: F405
        return y.to_hbm(ctx.tdma, HbmTensor[dtype, Chip, m("E")])  # noqa: F405

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[dtype, Chip, m("A, E")],  # noqa: F405
                            "return": HbmTensor[dtype, Chip, m("E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405


def column_concat_kernel(op, name="column_concat"):
    """y[e] = op over a of x[a, e] (f32) on the split stream: the reduce keeps each half of the
    flit apart, and `vector_widen_concat` joins them after it."""

    def body(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
        y = (ctx.main.begin(x.view()).fetch(m("E / 8, A"), m("E % 8"))  # noqa: F405
             .collect(m("E / 8, A"), m("E % 8")).vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
             .vector_narrow_split(m("E / 8, A, E / 4 % 2"), m("E % 4"))  # noqa: F405
             .vector_intra_slice_reduce(m("A"), m("E / 8, E / 4 % 2"), m("E % 4"), op)  # noqa: F405
             .vector_widen_concat(m("E / 8"), m("E % 8")).vector_final()  # noqa: F405
             .commit_trim(m("E % 8")).commit(m("E")))  # noqa: F405
        return y.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("E")])  # noqa: F405

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[f32, Chip, m("A, E")],  # noqa: F405
                            "return": HbmTensor[f32, Chip, m("E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405
