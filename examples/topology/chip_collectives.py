"""Collectives across four chips (docs/machine/topology.md "Redistributions"), built from
staged redistributions and a Vector Engine add.

Every chip holds i32 data spread over its 256 slices (`N`), 8 values per slice (`W`).
A redistribution (`chip_shuffle`, `chip_slice`, ending in `.to_dm`) is one Tensor DMA; the
sums are `add`, an interleaved read of two tensors that `vector_clip_zip(ADD_FXP)` adds
with wrapping i32 arithmetic.

- `chip_reduce_scatter`: chip c ends with shard c (`S = c`) summed over the four chips; round k
  brings each chip its shard from the chip k places on.
- `chip_all_gather`: every chip ends with every chip's shard, one `to_dm` whose Chip goes from
  `Q` to the broadcast `4` (the copies are relabelled `P` to return each chip's own).
- `chip_ring_all_reduce`: every chip ends with the sum; each round passes the last received
  tensor one chip along the ring (neighbour transfers only).
- `chip_butterfly_all_reduce`: the same sum in two rounds, exchanging with the chip whose
  number differs in one bit (XOR 1, then XOR 2).
"""

from npu_opt import *

axes(Q=4, P=4, S=4, N=256, W=8, I=2)

Shard = DmTensor[i32, m("Q"), m("1 # 2"), m("N"), m("W")]
Full = DmTensor[i32, m("Q"), m("1 # 2"), m("N"), m("S, W")]


def add(ctx, a, b):
    """a + b, slice by slice: both tensors read as one stream along I, then added."""
    return (ctx.main.begin_interleaved(a.view(), b.view(), m("I"))
            .fetch(m("I"), m("W"))
            .collect(m("I"), m("W"))
            .vector_init()
            .vector_intra_slice_unzip(m("I"), m("1"))
            .vector_clip_zip(ClipBinaryOpI32.ADD_FXP)
            .vector_final()
            .commit_trim(m("W"))
            .commit(m("W")))


@device(chip=4)
def chip_reduce_scatter(ctx: Context, x: HbmTensor[i32, m("Q"), m("S, N, W")]) -> HbmTensor[i32, m("Q"), m("N, W")]:
    full = x.to_dm(ctx.tdma, Full)
    total = None
    for k in range(4):
        part = (full.chip_shuffle([(c + k) % 4 for c in range(4)])
                .chip_slice(m("S"), m("W"), [0, 1, 2, 3])      # target chip c keeps shard c
                .to_dm(ctx.tdma, Shard))
        total = part if total is None else add(ctx, total, part)
    return total.to_hbm(ctx.tdma, HbmTensor[i32, m("Q"), m("N, W")])


@device(chip=4)
def chip_all_gather(ctx: Context, x: HbmTensor[i32, m("Q"), m("N, W")]) -> HbmTensor[i32, m("P"), m("Q, N, W")]:
    shard = x.to_dm(ctx.tdma, Shard)
    every = shard.to_dm(ctx.tdma, DmTensor[i32, m("4"), m("1 # 2"), m("N"), m("Q, W")])
    mine = every.reshape(DmTensor[i32, m("P"), m("1 # 2"), m("N"), m("Q, W")])
    return mine.to_hbm(ctx.tdma, HbmTensor[i32, m("P"), m("Q, N, W")])


@device(chip=4)
def chip_ring_all_reduce(ctx: Context, x: HbmTensor[i32, m("Q"), m("N, W")]) -> HbmTensor[i32, m("Q"), m("N, W")]:
    total = passed = x.to_dm(ctx.tdma, Shard)
    for _ in range(3):
        passed = passed.chip_shuffle([1, 2, 3, 0]).to_dm(ctx.tdma, Shard)   # from the next chip
        total = add(ctx, total, passed)
    return total.to_hbm(ctx.tdma, HbmTensor[i32, m("Q"), m("N, W")])


@device(chip=4)
def chip_butterfly_all_reduce(ctx: Context, x: HbmTensor[i32, m("Q"), m("N, W")]) -> HbmTensor[i32, m("Q"), m("N, W")]:
    total = x.to_dm(ctx.tdma, Shard)
    for pattern in ([1, 0, 3, 2], [2, 3, 0, 1]):
        total = add(ctx, total, total.chip_shuffle(pattern).to_dm(ctx.tdma, Shard))
    return total.to_hbm(ctx.tdma, HbmTensor[i32, m("Q"), m("N, W")])
