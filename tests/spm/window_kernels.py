"""Kernels reading a tile of a DM tensor at a fixed, non-zero start with `to_spm`, an
interleaved `begin` and a scatter (readers whose lowering once read the tensor from its start)."""

from npu_opt import *

axes(N=16, E=4, S=512, H=8, T=4, I=2, R=24, W=32, C=90)

Chip = m("1")
Cluster = m("1 # 2")
Rows = DmTensor[i32, Chip, Cluster, m("S / 8"), m("S % 8, T, H")]


@device(chip=1)
def spm_of_tile(ctx: Context, x: HbmTensor[i32, Chip, m("E, N")]) -> HbmTensor[i32, Chip, m("N")]:
    """Row 2 of four, staged into SPM and back."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 64"), m("E, N")])
    s = d.view().tile(m("E"), 1, m("1 # 4, N"), 2).to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m("1"), m("N")])
    back = s.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 64"), m("N")])
    return back.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("N")])


def interleaved_tiles(lhs_start: int, rhs_start: int):
    """min(x[:, lhs_start], y[:, rhs_start]) by one interleaved stream over two tiles."""

    @device(chip=1)
    def interleaved(ctx: Context, x: HbmTensor[i32, Chip, m("S, T, H")],
                    y: HbmTensor[i32, Chip, m("S, T, H")]) -> HbmTensor[i32, Chip, m("S, H")]:
        a = x.to_dm(ctx.tdma, Rows).view().tile(m("T"), 1, m("S % 8, 1 # 4, H"), lhs_start)
        b = y.to_dm(ctx.tdma, Rows).view().tile(m("T"), 1, m("S % 8, 1 # 4, H"), rhs_start)
        out = (ctx.main.begin_interleaved(a, b, m("I"))
               .fetch(m("S % 8, I"), m("H"))
               .collect(m("S % 8, I"), m("H"))
               .vector_init()
               .vector_intra_slice_unzip(m("I"), m("S % 8"))
               .vector_clip_zip(ClipBinaryOpI32.MIN)
               .vector_final()
               .commit_trim(m("H"))
               .commit(m("S % 8, H")))
        return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("S, H")])
    return interleaved


@device(chip=1)
def scatter_of_tile(ctx: Context, fresh: HbmTensor[bf16, Chip, m("R, E, W")], offsets: HbmTensor[i32, Chip, m("R")],
                    cache: Mut[HbmTensor[bf16, Chip, m("C, W")]]) -> None:
    """The rows of tile E = 2 scattered into the cache at the given byte offsets."""
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("R # 64"), m("E, W")])
    tile = d.view().tile(m("E"), 1, m("1 # 4, W"), 2)
    cache.view_mut().scatter(m("C"), m("W")).by_byte_offsets(offsets).from_dm_view(ctx.tdma, tile)


@device(chip=1)
def v06_scatter_of_tile(ctx: Context, fresh: HbmTensor[bf16, Chip, m("R, E, W")], offsets: HbmTensor[i32, Chip, m("R")],
                        cache: Mut[HbmTensor[bf16, Chip, m("C, W")]]) -> None:
    """The same by the v0.6 form, a tile's `dma_scatter`."""
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("R # 64"), m("E, W")])
    d.view().tile(m("E"), 1, m("1 # 4, W"), 2).dma_scatter(offsets, cache, m("R"))
