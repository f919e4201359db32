"""Kernels whose tiles start at a runtime scalar (docs/runtime.md#runtime-tile-starts), and
kernels refused around them; `# CODE` marks each line a diagnostic points at."""

from __future__ import annotations

from npu_opt import *

axes(A=64, B=32, P=8, T=4, N=16)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def column_block(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")],
                 n: HbmScalar[u32]) -> HbmTensor[i8, Chip, m("A, B = 8")]:
    """Columns 8n .. 8n+7 of x: an HBM read view tiled at `8 * n` (a usize expression)."""
    i = n.to_spm(ctx.tdma).cast(usize)
    d = x.view().tile(m("B"), 8, m("A, B = 8 # 32"), i * 8).to_dm(
        ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B = 8")])
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def column_block_at_8(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("A, B = 8")]:
    """`column_block` at the trace-time start 8."""
    d = x.view().tile(m("B"), 8, m("A, B = 8 # 32"), 8).to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B = 8")])
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def row_into_page(ctx: Context, cache: HbmTensor[i8, Chip, m("P, A, B")], row: HbmTensor[i8, Chip, m("A, B")],
                  p: HbmScalar[i32]) -> HbmTensor[i8, Chip, m("P, A, B")]:
    """The cache with page p replaced by `row`: an HBM write view tiled at a runtime start."""
    out = HbmTensor[i8, Chip, m("P, A, B")].new()
    cache.view().to_hbm_view(ctx.tdma, out.view_mut())
    page = out.view_mut().tile(m("P"), 1, m("1 #{!} 8, A, B"), p.to_spm(ctx.tdma).cast(usize))
    row.view().to_hbm_view(ctx.tdma, page)
    return out


@device(chip=1)
def dm_both_sides(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")], y: HbmTensor[i8, Chip, m("A, T, B")],
                  i: HbmScalar[usize], j: HbmScalar[usize]) -> HbmTensor[i8, Chip, m("A, T, B")]:
    """y with columns 0..8 of group j replaced by columns 8i..8i+8 of x, DM -> DM: a DM read
    view and a DM write view, each tiled at its own runtime start (one record, two scalars)."""
    src = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B")])
    d = y.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("T, B")])
    a, b = i.to_spm(ctx.tdma), j.to_spm(ctx.tdma)
    group = d.view_mut().tile(m("T"), 1, m("1 #{!} 4, B"), b).tile(m("B"), 8, m("1 #{!} 4, B = 8 #{!} 32"), 0)
    src.view().tile(m("B"), 8, m("B = 8 # 32"), a * 8).to_dm_view(ctx.tdma, group)
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def group_by_index(ctx: Context, x: HbmTensor[i32, Chip, m("A, T, N")],
                   g: HbmScalar[u64]) -> HbmTensor[i32, Chip, m("A, N")]:
    """Group g of x through the Main context: a stream's `begin` over a DM view tiled at a
    runtime start (the reference's `runtime_scalar_indexed_copy`)."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A"), m("T, N")])
    group = d.view().tile(m("T"), 1, m("1 # 4, N"), g.to_spm(ctx.tdma).cast(usize))
    out = (ctx.main.begin(group).fetch(m("N / 8"), m("N % 8")).collect(m("N / 8"), m("N % 8"))
           .commit_trim(m("N % 8")).commit(m("N")))
    return out.to_hbm(ctx.tdma)


@device(chip=1)
def refused(ctx: Context, x: HbmTensor[i32, Chip, m("A, T, N")], n: HbmScalar[u32],
            k: HbmScalar[usize]) -> HbmTensor[i32, Chip, m("A, T, N")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A"), m("T, N")])
    u, s = n.to_spm(ctx.tdma), k.to_spm(ctx.tdma)
    d.view().tile(m("T"), 1, m("1 # 4, N"), u)                                  # RUNTIME-9
    row = d.view().tile(m("T"), 1, m("1 # 4, N"), s)
    row.chip_shuffle([0]).to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A"), m("1 # 4, N")])  # (a redistribution of it: accepted)
    d.view_mut().tile(m("T"), 1, m("1 #{!} 4, N"), s).memset(ctx.sub, 0)        # (a memset at a runtime start: accepted)
    d.view().slice_tile(m("A"), 8, m("A = 8 # 64"), s)                          # RUNTIME-2
    row.tile(m("N"), 8, m("1 # 4, N = 8 # 16"), s)                              # LOOP-7
    d.view_mut().tile(m("N"), 1, m("T, N"), s)                                  # VIEW-2
    return d.to_hbm(ctx.tdma)


@device(chip=1)
def unaligned_dm_write(ctx: Context, x: HbmTensor[i32, Chip, m("A, N")],
                       k: HbmScalar[usize]) -> HbmTensor[i32, Chip, m("A, N")]:
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A"), m("N")])
    out = DmTensor[i32, Chip, Cluster, m("A"), m("N")].new()
    out.view_mut().memset(ctx.sub, 0)
    two = d.view().tile(m("N"), 2, m("N = 2 # 16"), 0)
    two.to_dm_view(ctx.tdma, out.view_mut().tile(m("N"), 2, m("N = 2 #{!} 16"), k.to_spm(ctx.tdma)))   # VIEW-13
    return out.to_hbm(ctx.tdma)
