"""Vector Engine kernels whose pass changes way by moving cells: `vector_narrow_split`
then, after the 4-way `steps`, `vector_widen_concat` (or `vector_widen_pad`, when `pad`)."""

from __future__ import annotations

from npu_opt import *  # noqa: F403

axes(A=8, E=64)  # noqa: F405

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
SPLIT_TIME, SPLIT_PACKET = m("A, E / 8, E / 4 % 2"), m("E % 4")  # noqa: F405


def split_kernel(dtype, steps, split=(SPLIT_TIME, SPLIT_PACKET), concat=(m("A, E / 8"), m("E % 8")),  # noqa: F405
                 out_dtype=None, pad=False, name="vector_split"):
    """An (8, 64) tensor collected 8 per flit, split to 4-way, `steps`, widened back."""
    out_dtype = out_dtype or dtype

    def body(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
        s = (ctx.main.begin(x.view())
             .fetch(m("A, E / 8"), m("E % 8"))  # noqa: F405
             .collect(m("A, E / 8"), m("E % 8"))  # noqa: F405
             .vector_init()
             .vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
             .vector_narrow_split(*split))
        for method, *args in steps:
            s = getattr(s, method)(*args)
        if pad:
            s = s.vector_widen_pad(m("E % 4 # 8")).vector_final().commit_trim(m("E % 4"))  # noqa: F405
        else:
            s = s.vector_widen_concat(*concat).vector_final().commit_trim(m("E % 8"))  # noqa: F405
        return s.commit().to_hbm(ctx.tdma)

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[dtype, Chip, m("A, E")],  # noqa: F405
                            "return": HbmTensor[out_dtype, Chip, m("A, E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405

