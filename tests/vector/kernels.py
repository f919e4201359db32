"""Vector Engine test kernels: a collected i32 or f32 stream through a constant chain.

`chain_kernel(dtype, steps, out_dtype)` builds a kernel over an (8, 64) tensor whose
stream runs `vector_init`, the ZERO tag, each `(method, *args)` of `steps`, then
`vector_final`, `commit_trim` and `commit`.
"""

from __future__ import annotations

from npu_opt import *  # noqa: F403

axes(A=8, E=64)  # noqa: F405

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405


def chain_kernel(dtype, steps, out_dtype=None, name="vector_chain", trim="E % 8"):
    """`trim`: the packet `commit_trim` keeps (a pass that ends on another packet)."""
    out_dtype = out_dtype or dtype

    def body(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
        s = (ctx.main.begin(x.view())
             .fetch(m("A, E / 8"), m("E % 8"))  # noqa: F405
             .collect(m("A, E / 8"), m("E % 8"))  # noqa: F405
             .vector_init()
             .vector_intra_slice_tag(TagMode.ZERO))  # noqa: F405
        for method, *args in steps:
            s = getattr(s, method)(*args)
        y = s.vector_final().commit_trim(m(trim)).commit()  # noqa: F405
        return y.to_hbm(ctx.tdma)

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[dtype, Chip, m("A, E")],  # noqa: F405
                            "return": HbmTensor[out_dtype, Chip, m("A, E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405


def float_kernel(steps, name="vector_float", dtype=f32):  # noqa: F405
    """An f32 (or `dtype`) stream of four elements per flit (`E % 4 # 8`) through
    narrow_trim, the 4-way `steps`, widen_pad, then vector_final and commit."""

    def body(ctx, x):
        x = x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
        s = (ctx.main.begin(x.view())
             .fetch(m("A, E / 4"), m("E % 4"))  # noqa: F405
             .collect(m("A, E / 4"), m("E % 4 # 8"))  # noqa: F405
             .vector_init()
             .vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
             .vector_narrow_trim(m("E % 4")))  # noqa: F405
        for method, *args in steps:
            s = getattr(s, method)(*args)
        y = s.vector_widen_pad(m("E % 4 # 8")).vector_final().commit_trim(m("E % 4")).commit()  # noqa: F405
        return y.to_hbm(ctx.tdma)

    body.__name__ = name
    body.__annotations__ = {"ctx": Context, "x": HbmTensor[dtype, Chip, m("A, E")],  # noqa: F405
                            "return": HbmTensor[dtype, Chip, m("A, E")]}  # noqa: F405
    return device(chip=1)(body)  # noqa: F405


def cpu_equals_visa(kernel, x):
    """Compile `kernel`: its VISA text parses back to itself and verifies, and the
    interpreter's result equals the cpu backend's bit for bit."""
    import numpy as np

    import npu_opt
    from tu_ops import rngd
    from visa.interp import execute
    from visa.parser import parse_visa
    from visa.printer import print_artifact
    from visa.verify import verify_text

    artifact = npu_opt.compile(kernel)
    assert print_artifact(parse_visa(artifact.text)) == artifact.text
    verify_text(artifact.text, rngd())
    cpu = npu_opt.run(kernel, x)
    visa = execute(parse_visa(artifact.text), [x])
    assert cpu.dtype == visa.dtype
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))


@device(chip=1)  # noqa: F405
def widened_i8_kernel(ctx: Context, x: HbmTensor[i8, Chip, m("A, E")]) -> HbmTensor[i32, Chip, m("A, E")]:  # noqa: F405
    """i8 widened by the Fetch Adapter, then `x * 5 - 3` (saturating) in the Vector Engine."""
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    y = (ctx.main.begin(x.view())
         .fetch(m("A, E / 8"), m("E % 8"))  # noqa: F405
         .fetch_cast(i32)  # noqa: F405
         .collect(m("A, E / 8"), m("E % 8"))  # noqa: F405
         .vector_init()
         .vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
         .vector_fxp(FxpBinaryOp.MUL_INT, 5)  # noqa: F405
         .vector_fxp(FxpBinaryOp.SUB_FXP_SAT, 3)  # noqa: F405
         .vector_final()
         .commit_trim(m("E % 8"))  # noqa: F405
         .commit())
    return y.to_hbm(ctx.tdma)
