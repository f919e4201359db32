"""Kernels of the scratchpad and staged gather / scatter tests (docs/machine/spm.md)."""

from npu_opt import *

axes(T=200, W=32, G=256, N=16, CL=2, S=24, C=90)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def spm_round_trip(ctx: Context, x: HbmTensor[i32, Chip, m("CL, N")]) -> HbmTensor[i32, Chip, m("CL, N")]:
    """DM -> SPM -> DM with each cluster holding its own list (Pe `1 # 4`: PE 0 of 4)."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, m("CL"), m("1 # 256"), m("N")])
    s = d.to_spm(ctx.tdma, SpmTensor[i32, Chip, m("CL"), m("1 # 4"), m("N")])
    back = s.to_dm(ctx.tdma, DmTensor[i32, Chip, m("CL"), m("N / 2 # 256"), m("N % 2")])
    return back.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("CL, N")])


@device(chip=1)
def spm_from_view(ctx: Context, x: HbmTensor[i32, Chip, m("N")]) -> HbmTensor[i32, Chip, m("N")]:
    """A read view staged into SPM (one PE: 64 slices), back into a 128-slice DM tensor."""
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("N / 2 # 64"), m("N % 2")])
    s = d.view().to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m("1"), m("N")])
    back = s.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 64"), m("N")])
    return back.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("N")])


@device(chip=1)
def rows_by_positions(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")],
                      rows: HbmTensor[i32, Chip, m("CL, N")]) -> HbmTensor[bf16, Chip, m("CL, N, W")]:
    """Each cluster gathers the rows of its own SPM list: the domain is (CL, N)."""
    d = rows.to_dm(ctx.tdma, DmTensor[i32, Chip, m("CL"), m("1 # 256"), m("N")])
    idx = d.to_spm(ctx.tdma, SpmTensor[i32, Chip, m("CL"), m("1 # 4"), m("N")])
    out = table.gather(m("T"), m("W")).by_positions(m("CL, N"), idx).to_dm(
        ctx.tdma, DmTensor[bf16, Chip, m("CL"), m("N # 64"), m("W")])
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("CL, N, W")])


@device(chip=1)
def shared_list(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")],
                rows: HbmTensor[i32, Chip, m("N")]) -> HbmTensor[bf16, Chip, m("N, W")]:
    """One list (a padded Cluster holds one copy): the domain is the list's own axis."""
    d = rows.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("N")])
    idx = d.to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m("1 # 4"), m("N")])
    out = table.gather(m("T"), m("W")).by_positions(m("N"), idx).to_dm(
        ctx.tdma, DmTensor[bf16, Chip, Cluster, m("N # 64"), m("W")])
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("N, W")])


def _prefixed(n):
    @device(chip=1)
    def prefixed(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")],
                 offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[bf16, Chip, m("G, W")]:
        out = table.gather(m("T"), m("W")).by_byte_offsets(offsets).sparse_prefix(n).to_dm(
            ctx.tdma, DmTensor[bf16, Chip, Cluster, m("G"), m("W")])
        return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("G, W")])
    return prefixed


PREFIXED = {n: _prefixed(n) for n in (0, -5, 77, 256, 10_000)}


@device(chip=1)
def staged_offsets(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")],
                   offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[bf16, Chip, m("G, W")]:
    out = table.gather(m("T"), m("W")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[bf16, Chip, Cluster, m("G"), m("W")])
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("G, W")])


@device(chip=1)
def v06_offsets(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")],
                offsets: HbmTensor[i32, Chip, m("G")]) -> HbmTensor[bf16, Chip, m("G, W")]:
    out = table.dma_gather_scaled(offsets, DmTensor[bf16, Chip, Cluster, m("G"), m("W")])
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("G, W")])


@device(chip=1)
def staged_scatter(ctx: Context, fresh: HbmTensor[bf16, Chip, m("S, W")], offsets: HbmTensor[i32, Chip, m("S")],
                   cache: Mut[HbmTensor[bf16, Chip, m("C, W")]]) -> None:
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S # 64"), m("W")])
    cache.view_mut().scatter(m("C"), m("W")).by_byte_offsets(offsets.view()).from_dm(ctx.tdma, d)


@device(chip=1)
def staged_scatter_view(ctx: Context, fresh: HbmTensor[bf16, Chip, m("S, W")], offsets: HbmTensor[i32, Chip, m("S")],
                        cache: Mut[HbmTensor[bf16, Chip, m("C, W")]]) -> None:
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S # 64"), m("W")])
    cache.view_mut().scatter(m("C"), m("W")).by_byte_offsets(offsets).from_dm_view(ctx.tdma, d.view())


@device(chip=1)
def v06_scatter(ctx: Context, fresh: HbmTensor[bf16, Chip, m("S, W")], offsets: HbmTensor[i32, Chip, m("S")],
                cache: Mut[HbmTensor[bf16, Chip, m("C, W")]]) -> None:
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("S # 64"), m("W")])
    d.dma_scatter(offsets, cache, m("S"))


@device(chip=1)
def scatter_by_positions(ctx: Context, fresh: HbmTensor[bf16, Chip, m("CL, N, W")], rows: HbmTensor[i32, Chip, m("CL, N")],
                         cache: Mut[HbmTensor[bf16, Chip, m("C, W")]]) -> None:
    """Each cluster scatters its rows at the positions of its own SPM list: the domain is (CL, N)."""
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, m("CL"), m("N # 64"), m("W")])
    idx = rows.to_dm(ctx.tdma, DmTensor[i32, Chip, m("CL"), m("1 # 256"), m("N")]).to_spm(
        ctx.tdma, SpmTensor[i32, Chip, m("CL"), m("1 # 4"), m("N")])
    cache.view_mut().scatter(m("C"), m("W")).by_positions(m("CL, N"), idx).from_dm(ctx.tdma, d)


axes(SC=2)


@device(chip=2)
def broadcast_index(ctx: Context, table: HbmTensor[bf16, m("SC"), m("T, W")],
                    offsets: HbmTensor[i32, m("2"), m("G")]) -> HbmTensor[bf16, m("SC"), m("G, W")]:
    """One list of offsets (a broadcast Chip) read by both chips against their own tables."""
    out = table.gather(m("T"), m("W")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[bf16, m("SC"), Cluster, m("G"), m("W")])
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, m("SC"), m("G, W")])


@device(chip=2)
def index_on_its_own_chips(ctx: Context, table: HbmTensor[bf16, m("SC"), m("T, W")],
                           offsets: HbmTensor[i32, m("1 # 2"), m("G")]) -> HbmTensor[bf16, m("SC"), m("G, W")]:
    out = table.gather(m("T"), m("W")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[bf16, m("SC"), Cluster, m("G"), m("W")])
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, m("SC"), m("G, W")])
