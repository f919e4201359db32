"""Kernels the loop rules refuse (docs/loops.md); `# LOOP-n` marks each line a diagnostic points at."""

from npu_opt import *

axes(QP=8, QA=64, QB=32)

Chip = m("1")
Cluster = m("1 # 2")
Page = DmTensor[i8, Chip, Cluster, m("QA"), m("QB")]


@device(chip=1)
def past_the_end(ctx: Context, x: HbmTensor[i8, Chip, m("QP, QA, QB")]) -> HbmTensor[i8, Chip, m("QP, QA, QB")]:
    out = HbmTensor[i8, Chip, m("QP, QA, QB")].new()
    for k in ctx.loop(1, 5):
        page = x.view().tile(m("QP"), 1, m("1 # 8, QA, QB"), 2 * k)          # LOOP-1
        d = page.to_dm(ctx.tdma, Page)
        d.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("QP"), 1, m("1 #{!} 8, QA, QB"), k - 1))
    return out


@device(chip=1)
def below_zero(ctx: Context, x: HbmTensor[i8, Chip, m("QP, QA, QB")]) -> HbmTensor[i8, Chip, m("QP, QA, QB")]:
    out = HbmTensor[i8, Chip, m("QP, QA, QB")].new()
    for i in ctx.loop(8):
        d = x.view().tile(m("QP"), 1, m("1 # 8, QA, QB"), i).to_dm(ctx.tdma, Page)
        d.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("QP"), 1, m("1 #{!} 8, QA, QB"), i - 1))  # LOOP-1
    return out


@device(chip=1)
def not_affine(ctx: Context, x: HbmTensor[i8, Chip, m("QP, QA, QB")],
               n: HbmScalar[usize]) -> HbmTensor[i8, Chip, m("QP, QA, QB")]:
    out = HbmTensor[i8, Chip, m("QP, QA, QB")].new()
    s = n.to_spm(ctx.tdma)
    for i in ctx.loop(2):
        for j in ctx.loop(2):
            d = x.view().tile(m("QP"), 1, m("1 # 8, QA, QB"), i * j).to_dm(ctx.tdma, Page)  # LOOP-2
            d.view().to_hbm_view(ctx.tdma, out.view_mut().tile(m("QP"), 1, m("1 #{!} 8, QA, QB"), i + s))  # LOOP-2
    return out


@device(chip=1)
def escapes(ctx: Context, x: HbmTensor[i8, Chip, m("QP, QA, QB")]) -> HbmTensor[i8, Chip, m("QA, QB")]:
    for i in ctx.loop(8):
        d = x.view().tile(m("QP"), 1, m("1 # 8, QA, QB"), i).to_dm(ctx.tdma, Page)
    return d.to_hbm(ctx.tdma)                                                    # LOOP-3


@device(chip=1)
def index_after_loop(ctx: Context, x: HbmTensor[i8, Chip, m("QP, QA, QB")]) -> HbmTensor[i8, Chip, m("QA, QB")]:
    for i in ctx.loop(8):
        pass
    d = x.view().tile(m("QP"), 1, m("1 # 8, QA, QB"), i).to_dm(ctx.tdma, Page)  # LOOP-3
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def bad_bounds(ctx: Context, x: HbmTensor[i8, Chip, m("QP, QA, QB")],
               n: HbmScalar[i32]) -> HbmTensor[i8, Chip, m("QP, QA, QB")]:
    out = HbmTensor[i8, Chip, m("QP, QA, QB")].new()
    for i in ctx.loop(n):                                                        # LOOP-4
        pass
    for i in ctx.loop(2.5):                                                      # LOOP-4
        pass
    for i in ctx.loop(4):                                                        # LOOP-4
        break
    return out


@device(chip=1)
def raises_in_body(ctx: Context, x: HbmTensor[i8, Chip, m("QP, QA, QB")]) -> HbmTensor[i8, Chip, m("QP, QA, QB")]:
    for i in ctx.loop(8):
        x.no_such_method()
    return x
