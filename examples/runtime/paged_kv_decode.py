"""Paged KV decode read with a runtime length (examples/runtime/paged_kv_decode.py, docs/machine/spm.md).

A KV cache is a pool of 32 physical blocks; a block holds 16 tokens x 4 heads x 64 bf16
(8 KiB). A sequence may grow to 16 logical blocks, and its block table lists the byte
offset of each one in the pool (block number x 8 KiB). At a decode step only the first
`used` blocks hold tokens; the table's entries past them are left over from an earlier
sequence, or zero, but still name blocks of the pool.

`used` changes from step to step and is known only at launch: it is an `HbmScalar[i32]`,
read with `to_spm` and given to the gather as `sparse_prefix(used)` (furiosa-opt v0.9).
The kernel is compiled once; each launch gathers the first `used` blocks in table order
and leaves the rest of the output zero (zero or less gathers none, more than 16 gathers
all 16). Each of the 256 slices receives one (block, token) row of 4 x 64 values. The
schedule model counts all 16 blocks, the worst case.
"""

from npu_opt import *

axes(PB=32, LB=16, BT=16, KH=4, HD=64)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def paged_kv_decode(ctx: Context, pool: HbmTensor[bf16, Chip, m("PB, BT, KH, HD")],
                    block_offsets: HbmTensor[i32, Chip, m("LB")],
                    used: HbmScalar[i32]) -> HbmTensor[bf16, Chip, m("LB, BT, KH, HD")]:
    valid = used.to_spm(ctx.tdma)
    blocks = (pool.gather(m("PB"), m("BT, KH, HD")).by_byte_offsets(block_offsets).sparse_prefix(valid)
              .to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("LB, BT"), m("KH, HD")]))
    return blocks.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("LB, BT, KH, HD")])
