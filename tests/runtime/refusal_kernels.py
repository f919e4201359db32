"""Kernels refused by the runtime rules (docs/runtime.md); `# RUNTIME-n` marks each line
a diagnostic points at."""

from __future__ import annotations

from npu_opt import *

axes(A=64, E=4, W=8)

Chip = m("1")
Cluster = m("1 # 2")
Row = DmTensor[i32, Chip, Cluster, m("A"), m("E, W")]


@device(chip=1)
def truth_values(ctx: Context, x: HbmTensor[i32, Chip, m("A, E, W")], n: HbmScalar[u32],
                 k: HbmScalar[i32]) -> HbmTensor[i32, Chip, m("A, E, W")]:
    d = x.to_dm(ctx.tdma, Row)
    count = n.to_spm(ctx.tdma)
    if count > 2:                                                               # RUNTIME-1
        d.view_mut().memset(ctx.sub, 1)
    assert count != 0                                                           # RUNTIME-1
    for e in range(count):                                                      # RUNTIME-2
        pass
    d.view_mut().tile(m("E"), 1, m("1 #{!} 4, W"), count.cast(usize)).memset(ctx.sub, 0)  # (a memset at a runtime start: accepted)
    with ctx.when(count):                                                       # RUNTIME-3
        pass
    with ctx.when(count > 1 and count < 3):                                     # RUNTIME-1
        pass
    signed = k.to_spm(ctx.tdma)
    with ctx.when(signed < count):                                              # RUNTIME-4
        pass
    with ctx.when(count > -1):                                                  # RUNTIME-4
        pass
    with ctx.when((count > 1) + 1 > 0):                                         # RUNTIME-4
        pass
    scaled = signed.cast(f32)                                                   # RUNTIME-5
    flag = signed.cast(bool)                                                    # RUNTIME-5
    with ctx.when(n > 0):                                                       # RUNTIME-7
        pass
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def immediate(ctx: Context, x: HbmTensor[i32, Chip, m("A, E, W")],
              c: HbmScalar[i32]) -> HbmTensor[i32, Chip, m("A, E, W")]:
    d = x.to_dm(ctx.tdma, Row)
    step = c.to_spm(ctx.tdma)
    out = (ctx.main.begin(d.view()).fetch(m("E"), m("W")).collect(m("E"), m("W"))
           .vector_init().vector_intra_slice_tag(TagMode.ZERO)
           .vector_fxp(FxpBinaryOp.ADD_FXP, step)                                # RUNTIME-2
           .vector_final().commit_trim(m("W")).commit(m("E, W")))
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def escapes(ctx: Context, x: HbmTensor[i32, Chip, m("A, E, W")],
            n: HbmScalar[u32]) -> HbmTensor[i32, Chip, m("A, E, W")]:
    d = x.to_dm(ctx.tdma, Row)
    out = Row.new()
    go = n.to_spm(ctx.tdma) > 0
    with ctx.when(go):
        copy = d.to_dm_pcopy(ctx.sub, Row)
        d.view().to_dm_view(ctx.tdma, out.view_mut())        # a write into `out`: it carries out
    fetched = ctx.main.begin(d.view()).fetch(m("E"), m("W"))
    with ctx.when(go):
        (fetched.collect(m("E"), m("W"))                                        # RUNTIME-6
         .commit_trim(m("W")).commit_view(out.view_mut()))
    (ctx.main.begin(copy.view()).fetch(m("E"), m("W"))                          # RUNTIME-6
     .collect(m("E"), m("W")).commit_trim(m("W")).commit_view(out.view_mut()))
    return out.to_hbm(ctx.tdma)


@device(chip=1)
def bad_scalar_type(ctx: Context, x: HbmTensor[i32, Chip, m("A, E, W")],
                    n: HbmScalar[f32]) -> HbmTensor[i32, Chip, m("A, E, W")]:   # RUNTIME-7
    return x.to_dm(ctx.tdma, Row).to_hbm(ctx.tdma)


@device(chip=1)
def whole_write_under_guard(ctx: Context, x: HbmTensor[i32, Chip, m("A, E, W")], n: HbmScalar[u32],
                            out: Mut[HbmTensor[i32, Chip, m("A, E, W")]]) -> None:
    with ctx.when(n.to_spm(ctx.tdma) > 0):
        x.to_dm(ctx.tdma, Row).to_hbm(ctx.tdma, out)                            # RUNTIME-6
