"""Pair-mode test kernels: a DM tensor whose time holds the size-2 grouping axis `I`.

`pair_kernel(dtype, steps)` reads x[I, A, E] (I = 2) with `I` innermost in time, unzips it
(group g is x[g]), runs each `(method, *args)` of `steps` on the pair and then on the merged
stream, and commits the merged [A, E] result. `float_pair_kernel` does the same on the
4-way float path: unzip, `vector_narrow_split`, steps, `vector_widen_pad`.
"""

from __future__ import annotations

from npu_opt import *  # noqa: F403

axes(I=2, A=4, E=32, J=2)  # noqa: F405  (J: an axis no stream holds)

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405


def _annotate(body, name, dtype, out_dtype):
    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[dtype, Chip, m("I, A, E")],  # noqa: F405
                            "return": HbmTensor[out_dtype, Chip, m("A, E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405


UNZIP = (m("I"), m("A, E / 8, 1 # 2"), m("A, E / 8"))  # noqa: F405


def _unzipped(ctx, x, dtype, unzip=UNZIP):
    x = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("I, A, E")])  # noqa: F405
    return (ctx.main.begin(x.view())
            .fetch(m("A, E / 8, I"), m("E % 8"))  # noqa: F405
            .collect(m("A, E / 8, I"), m("E % 8"))  # noqa: F405
            .vector_init()
            .vector_intra_slice_unzip(*unzip))


def pair_kernel(dtype, steps, out_dtype=None, name="pair_chain", unzip=UNZIP):
    def body(ctx, x):
        s = _unzipped(ctx, x, dtype, unzip)
        for method, *args in steps:
            s = getattr(s, method)(*args)
        return s.vector_final().commit_trim(m("E % 8")).commit().to_hbm(ctx.tdma)  # noqa: F405

    return _annotate(body, name, dtype, out_dtype or dtype)


def float_pair_kernel(steps, name="pair_float"):
    def body(ctx, x):
        s = _unzipped(ctx, x, f32).vector_narrow_split(m("A, E / 8, E / 4 % 2"), m("E % 4"))  # noqa: F405
        for method, *args in steps:
            s = getattr(s, method)(*args)
        y = s.vector_widen_pad(m("E % 4 # 8")).vector_final().commit_trim(m("E % 4")).commit()  # noqa: F405
        return y.to_hbm(ctx.tdma)

    return _annotate(body, name, f32, f32)


class Lazy:
    """An argument built while the kernel traces (a refusal then is a diagnostic of the trace)."""

    def __init__(self, fn):
        self.fn = fn


def tagged_kernel(dtype, mode, steps, name="tagged_chain"):
    """x[A, E] of 8-element flits (`I` unused) through `vector_intra_slice_tag(mode)` and `steps`
    (a `Lazy` argument is built at its call)."""

    def body(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
        s = (ctx.main.begin(x.view()).fetch(m("A, E / 8"), m("E % 8"))  # noqa: F405
             .collect(m("A, E / 8"), m("E % 8")).vector_init().vector_intra_slice_tag(mode))  # noqa: F405
        for method, *args in steps:
            s = getattr(s, method)(*(a.fn() if isinstance(a, Lazy) else a for a in args))
        return s.vector_final().commit_trim(m("E % 8")).commit().to_hbm(ctx.tdma)  # noqa: F405

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[dtype, Chip, m("A, E")],  # noqa: F405
                            "return": HbmTensor[dtype, Chip, m("A, E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405
