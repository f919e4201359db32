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


@device(chip=1)
def i32_into_view(ctx: Context, x: HbmTensor[i32, Chip, m("P, S")], out: HbmTensorViewMut[i32, Chip, m("P, S")]
                  ) -> HbmTensor[i32, Chip, m("P, S")]:
    """The other in-out form (a write view parameter), beside a result: both get `x`."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("P # 256"), m("S")])
    d.view().to_hbm_view(ctx.tdma, out)
    return d.to_hbm(ctx.tdma)


def copy_of(dtype):
    """A copy through DM of an R x C tensor of `dtype`."""

    @device(chip=1)
    def copy(ctx: Context, x: HbmTensor[dtype, Chip, m("R, C")]) -> HbmTensor[dtype, Chip, m("R, C")]:
        return x.to_dm(ctx.tdma, DmTensor[dtype, Chip, Cluster, m("R / 16 # 256"), m("R % 16, C")]).to_hbm(ctx.tdma)

    return copy


COPIES = {d.value: copy_of(d) for d in (i8, u8, i16, i32, f32, bf16, f8e4m3, f8e5m2)}
