"""Paged KV gather (examples/topology/paged_kv_gather.py): a block table in a tensor.

A KV cache lives in a pool of 32 physical blocks of 16 tokens, 8 heads of 64 bf16 each.
A sequence's 16 logical blocks are scattered over the pool; its block table (an i32
tensor of block numbers) says where. The kernel stages the table in DM and gathers the
sequence's blocks in logical order (`dma_gather_unscaled`: the values are block numbers,
read from DM). Each of the 256 slices receives one (block, token) row of 8 x 64 values,
and the DMA back to HBM restores the pool's (block, head, token, dim) order.
"""

from npu_opt import *

axes(PB=32, LB=16, KH=8, BT=16, HD=64)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def paged_kv_gather(ctx: Context, pool: HbmTensor[bf16, Chip, m("PB, KH, BT, HD")],
                    block_table: HbmTensor[i32, Chip, m("LB")]) -> HbmTensor[bf16, Chip, m("LB, KH, BT, HD")]:
    table = block_table.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("LB / 2 # 64"), m("LB % 2")])
    blocks = pool.dma_gather_unscaled(table, DmTensor[bf16, Chip, Cluster, m("LB, BT"), m("KH, HD")])
    return blocks.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("LB, KH, BT, HD")])
