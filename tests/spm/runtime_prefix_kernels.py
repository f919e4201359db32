"""Kernels of the runtime sparse prefix tests (docs/machine/spm.md "Staged gather"): a gather
whose valid length is an `HbmScalar` read at launch."""

from npu_opt import *

axes(T=200, W=32, G=256, SC=2)

Chip = m("1")
Cluster = m("1 # 2")
OUT = DmTensor[bf16, Chip, Cluster, m("G"), m("W")]


@device(chip=1)
def runtime_prefix(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")], offsets: HbmTensor[i32, Chip, m("G")],
                   n: HbmScalar[i32]) -> HbmTensor[bf16, Chip, m("G, W")]:
    """Each chip gathers the first `n` offsets, `n` known only at launch."""
    valid = n.to_spm(ctx.tdma)
    out = table.gather(m("T"), m("W")).by_byte_offsets(offsets).sparse_prefix(valid).to_dm(ctx.tdma, OUT)
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("G, W")])


@device(chip=1)
def cast_prefix(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")], offsets: HbmTensor[i32, Chip, m("G")],
                n: HbmScalar[u32]) -> HbmTensor[bf16, Chip, m("G, W")]:
    """A u32 length cast to i32 (Rust's `n as i32`) and shifted by one, a computed prefix."""
    valid = (n.to_spm(ctx.tdma) - 1).cast(i32)
    out = table.gather(m("T"), m("W")).by_byte_offsets(offsets).sparse_prefix(valid).to_dm(ctx.tdma, OUT)
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("G, W")])


@device(chip=1)
def full_gather(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")], offsets: HbmTensor[i32, Chip, m("G")],
                n: HbmScalar[i32]) -> HbmTensor[bf16, Chip, m("G, W")]:
    """The same gather without a prefix (the schedule's worst case of `runtime_prefix`)."""
    n.to_spm(ctx.tdma)
    out = table.gather(m("T"), m("W")).by_byte_offsets(offsets).to_dm(ctx.tdma, OUT)
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("G, W")])


@device(chip=2)
def two_chip_prefix(ctx: Context, table: HbmTensor[bf16, m("SC"), m("T, W")],
                    offsets: HbmTensor[i32, m("SC"), m("G")], n: HbmScalar[i32]) -> HbmTensor[bf16, m("SC"), m("G, W")]:
    """Two chips, each with its own list: the one runtime length cuts both."""
    valid = n.to_spm(ctx.tdma)
    out = table.gather(m("T"), m("W")).by_byte_offsets(offsets).sparse_prefix(valid).to_dm(
        ctx.tdma, DmTensor[bf16, m("SC"), Cluster, m("G"), m("W")])
    return out.to_hbm(ctx.tdma, HbmTensor[bf16, m("SC"), m("G, W")])


def refused(make):
    """A one-chip kernel whose gather plan `make(ctx, table, offsets, n32, nu32, flag)` states."""
    @device(chip=1)
    def kernel(ctx: Context, table: HbmTensor[bf16, Chip, m("T, W")], offsets: HbmTensor[i32, Chip, m("G")],
               n32: HbmScalar[i32], nu32: HbmScalar[u32], flag: HbmScalar[bool]) -> HbmTensor[bf16, Chip, m("G, W")]:
        out = make(ctx, table, offsets, n32, nu32, flag).to_dm(ctx.tdma, OUT)
        return out.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("G, W")])
    return kernel
