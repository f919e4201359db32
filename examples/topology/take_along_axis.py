"""Reading and writing token positions of a per-head KV cache (examples/topology/take_along_axis.py).

The cache holds 8 heads of 256 positions of 64 bf16 values: `m("HEADS, POS, HDIM")`, the
position axis inside the head axis. The staged gather names it as the indexed axis, so
each byte offset (position * 128, the bytes of one HDIM row) reads that position of
every head: `np.take(cache, positions, axis=1)`. The staged scatter writes new tokens
the same way, `cache[:, positions] = fresh`, leaving the other positions as they were.
A position outside the cache is a run-time error (GATHER-6 / SCATTER-6) naming its entry.
"""

from npu_opt import *

axes(HEADS=8, POS=256, HDIM=64, PICK=32, NEW=16)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def take_along_axis(ctx: Context, cache: HbmTensor[bf16, Chip, m("HEADS, POS, HDIM")],
                    offsets: HbmTensor[i32, Chip, m("PICK")]) -> HbmTensor[bf16, Chip, m("HEADS, PICK, HDIM")]:
    rows = cache.gather(m("POS"), m("HEADS, HDIM")).by_byte_offsets(offsets).to_dm(
        ctx.tdma, DmTensor[bf16, Chip, Cluster, m("HEADS, PICK"), m("HDIM")])
    return rows.to_hbm(ctx.tdma, HbmTensor[bf16, Chip, m("HEADS, PICK, HDIM")])


@device(chip=1)
def put_along_axis(ctx: Context, fresh: HbmTensor[bf16, Chip, m("HEADS, NEW, HDIM")],
                   offsets: HbmTensor[i32, Chip, m("NEW")],
                   cache: Mut[HbmTensor[bf16, Chip, m("HEADS, POS, HDIM")]]) -> None:
    d = fresh.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, m("HEADS, NEW # 32"), m("HDIM")])
    cache.view_mut().scatter(m("POS"), m("HEADS, HDIM")).by_byte_offsets(offsets).from_dm(ctx.tdma, d)
