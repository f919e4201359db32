"""Collectives across the two clusters of one chip (docs/machine/topology.md
"Redistributions"): the cluster counterparts of examples/topology/chip_collectives.py.

Each cluster holds i32 data over its 256 slices (`N`), 8 values per slice (`W`); `G` names
the cluster, `H` the copy a broadcast gives each cluster.

- `cluster_reduce_scatter`: cluster g ends with shard g (`S = g`) summed over both clusters: its own
  shard by `asymmetric_cluster_slice` (Sub context), the other cluster's by one
  `cluster_swap().cluster_slice(...)` plan, then a Vector Engine add.
- `cluster_all_gather`: both clusters end with both shards, one `to_dm` whose Cluster goes from `G`
  to the broadcast `2`.
- `cluster_all_reduce`: both clusters end with the sum: the partials plus their cluster swap.
"""

from npu_opt import *

axes(G=2, H=2, S=2, N=256, W=8, I=2)

Shard = DmTensor[i32, m("1"), m("G"), m("N"), m("W")]


def add(ctx, a, b):
    """a + b, slice by slice (as in chip_collectives.py)."""
    return (ctx.main.begin_interleaved(a.view(), b.view(), m("I"))
            .fetch(m("I"), m("W"))
            .collect(m("I"), m("W"))
            .vector_init()
            .vector_intra_slice_unzip(m("I"), m("1"))
            .vector_clip_zip(ClipBinaryOpI32.ADD_FXP)
            .vector_final()
            .commit_trim(m("W"))
            .commit(m("W")))


@device(chip=1)
def cluster_reduce_scatter(ctx: Context, x: HbmTensor[i32, m("1"), m("G, S, N, W")]) -> HbmTensor[i32, m("1"), m("G, N, W")]:
    full = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("G"), m("N"), m("S, W")])
    own = full.asymmetric_cluster_slice(ctx.sub, m("S"), m("W"), [0, 1])
    other = full.cluster_swap().cluster_slice(m("S"), m("W"), [0, 1]).to_dm(ctx.tdma, Shard)
    return add(ctx, own, other).to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("G, N, W")])


@device(chip=1)
def cluster_all_gather(ctx: Context, x: HbmTensor[i32, m("1"), m("G, N, W")]) -> HbmTensor[i32, m("1"), m("H, G, N, W")]:
    shard = x.to_dm(ctx.tdma, Shard)
    both = shard.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("2"), m("N"), m("G, W")])
    mine = both.reshape(DmTensor[i32, m("1"), m("H"), m("N"), m("G, W")])
    return mine.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("H, G, N, W")])


@device(chip=1)
def cluster_all_reduce(ctx: Context, x: HbmTensor[i32, m("1"), m("G, N, W")]) -> HbmTensor[i32, m("1"), m("G, N, W")]:
    partial = x.to_dm(ctx.tdma, Shard)
    total = add(ctx, partial, partial.cluster_swap().to_dm(ctx.tdma, Shard))
    return total.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("G, N, W")])
