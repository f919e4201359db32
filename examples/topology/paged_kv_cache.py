"""Paged KV cache (examples/topology/paged_kv_cache.py): write new blocks, then read a sequence's blocks.

The cache is a pool of 32 physical blocks; a block holds 16 tokens x 4 heads x 64 bf16. The
kernel first writes 4 freshly computed blocks into the pool slots the host picked (a staged
scatter by byte offsets into the in-out pool), then gathers one sequence's 16 logical blocks
in order through its block table. The block table holds block numbers, so it is staged into
the scratchpad (`to_spm`, the whole list on PE 0 of 4) and read by position. Each of the 256
slices receives one (block, token) row of 4 x 64 values.
"""

from npu_opt import *

axes(PB=32, NB=4, LB=16, BT=16, KH=4, HD=64)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def paged_kv_cache(ctx: Context, pool: Mut[HbmTensor[bf16, Chip, m("PB, BT, KH, HD")]],
                   fresh: HbmTensor[bf16, Chip, m("NB, BT, KH, HD")], slots: HbmTensor[i32, Chip, m("NB")],
                   block_table: HbmTensor[i32, Chip, m("LB")]) -> HbmTensor[bf16, Chip, m("LB, BT, KH, HD")]:
    new = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("NB, BT"), m("KH, HD")])
    pool.view_mut().scatter(m("PB"), m("BT, KH, HD")).by_byte_offsets(slots).from_dm(ctx.tdma, new)

    table = block_table.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("1 # 256"), m("LB")])
    table = table.to_spm(ctx.tdma, SpmTensor[i32, Chip, Cluster, m("1 # 4"), m("LB")])
    blocks = pool.gather(m("PB"), m("BT, KH, HD")).by_positions(m("LB"), table).to_dm(
        ctx.tdma, DmTensor[bf16, Chip, Cluster, m("LB, BT"), m("KH, HD")])
    return blocks.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("LB, BT, KH, HD")])
