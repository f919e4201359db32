"""Small kernels of the framework-op tests (tests/interop): each a few DMAs or one pass, so
a launch takes well under a second on the cpu backend."""

from npu_opt import *

axes(R=64, C=32, P=8, S=16)

Chip, Cluster = m("1"), m("1 # 2")
Rows = DmTensor[bf16, Chip, Cluster, m("R / 16 # 256"), m("R % 16, C")]


@device(chip=1)
def bf16_twice(ctx: Context, x: HbmTensor[bf16, Chip, m("R, C")]) -> tuple[HbmTensor[bf16, Chip, m("R, C")],
                                                                            HbmTensor[bf16, Chip, m("C, R")]]:
    """Two results: the rows as they are, and transposed by the DMA on the way out."""
    d = x.to_dm(ctx.tdma, Rows)
    return d.to_hbm(ctx.tdma), d.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("C, R")])


@device(chip=1)
def i32_page_copy(ctx: Context, cache: Mut[HbmTensor[i32, Chip, m("P, S")]], src: HbmScalar[u32],
                  dst: HbmScalar[u32]) -> None:
    """An in-out tensor and two launch-time scalars: page `src` of `cache` is written over page `dst`."""
    page = cache.view().tile(m("P"), 1, m("1 # 8, S"), src.to_spm(ctx.tdma).cast(usize))
    d = page.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("S")])
    slot = cache.view_mut().tile(m("P"), 1, m("1 #{!} 8, S"), dst.to_spm(ctx.tdma).cast(usize))
    d.view().to_hbm_view(ctx.tdma, slot)


@device(chip=1)
def refused_copy(ctx: Context, x: HbmTensor[i8, Chip, m("R, C")]) -> HbmTensor[i8, Chip, m("R, C")]:
    """DMA-3: a DM tensor larger than a slice's DM (every row on one slice, padded to 2 MiB)."""
    return x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("1 # 256"), m("R, C # 32768")]).to_hbm(ctx.tdma)
