"""Own kernels that chain a reduce-scatter into an all-gather whose relayout writes a view
or reads one (docs/machine/topology.md "Relayouts across chips and clusters")."""

from npu_opt import *

axes(P=4, Q=4, S=4, U=8, V=8, I=2, G=2, H=2, J=2, N=256, W=8)

Rows = DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("S, U, V")]
Row = DmTensor[i32, m("P"), m("1 # 2"), m("1 # 256"), m("U, V")]
Gathered = DmTensor[i32, m("4"), m("1 # 2"), m("1 # 256"), m("P, U, V")]


def _sum(ctx, a, b, group, packet):
    """a + b, wrapping i32: the two tensors read as one stream along I, `group` rows of
    `packet` values each (`group` "1": one row)."""
    time = m("I") if group == "1" else m(f"I, {group}")
    return (ctx.main.begin_interleaved(a.view(), b.view(), m("I"))
            .fetch(time, m(packet))
            .collect(time, m(packet))
            .vector_init()
            .vector_intra_slice_unzip(m("I"), m(group))
            .vector_clip_zip(ClipBinaryOpI32.ADD_FXP)
            .vector_final()
            .commit_trim(m(packet))
            .commit(m(packet) if group == "1" else m(f"{group}, {packet}")))


def _reduce_scatter(ctx, x):
    full = x.to_dm(ctx.tdma, Rows)
    total = None
    for k in range(4):
        part = (full.chip_shuffle([(c + k) % 4 for c in range(4)])
                .chip_slice(m("S"), m("U, V"), [0, 1, 2, 3]).to_dm(ctx.tdma, Row))
        total = part if total is None else _sum(ctx, total, part, "U", "V")
    return total


@device(chip=4)
def chip_rs_ag_into(ctx: Context, x: HbmTensor[i32, m("P"), m("S, U, V")]) -> HbmTensor[i32, m("Q"), m("P, U, V")]:
    """The all-gather writes a view of a tensor allocated first."""
    every = Gathered.new()
    _reduce_scatter(ctx, x).view().to_dm_view(ctx.tdma, every.view_mut())
    mine = every.reshape(DmTensor[i32, m("Q"), m("1 # 2"), m("1 # 256"), m("P, U, V")])
    return mine.to_hbm(ctx.tdma, HbmTensor[i32, m("Q"), m("P, U, V")])


@device(chip=4)
def chip_rs_ag_half(ctx: Context, x: HbmTensor[i32, m("P"), m("S, U, V")]) -> HbmTensor[i32, m("Q"), m("P, U, V")]:
    """The all-gather reads a tile of the reduce-scattered rows (U < 2) and writes them at
    U = 4, 5 of a zeroed tensor."""
    every = Gathered.new()
    every.view_mut().memset(ctx.sub, 0)
    rows = _reduce_scatter(ctx, x).view().tile(m("U"), 2, m("U = 2 # 8, V"), 0)
    rows.to_dm_view(ctx.tdma, every.view_mut().tile(m("U"), 2, m("P, U = 2 #{!} 8, V"), 4))
    mine = every.reshape(DmTensor[i32, m("Q"), m("1 # 2"), m("1 # 256"), m("P, U, V")])
    return mine.to_hbm(ctx.tdma, HbmTensor[i32, m("Q"), m("P, U, V")])


@device(chip=4)
def chip_rs_reshape_ag(ctx: Context, x: HbmTensor[i32, m("P"), m("S, U, V")]) -> HbmTensor[i32, m("Q"), m("S, U, V")]:
    """The book's composition: the shard's Chip relabelled `S` (chip s holds shard s), then
    one `to_dm` onto the broadcast Chip; its source is the reshaped view."""
    shard = _reduce_scatter(ctx, x).reshape(DmTensor[i32, m("S"), m("1 # 2"), m("1 # 256"), m("U, V")])
    every = shard.to_dm(ctx.tdma, DmTensor[i32, m("4"), m("1 # 2"), m("1 # 256"), m("S, U, V")])
    mine = every.reshape(DmTensor[i32, m("Q"), m("1 # 2"), m("1 # 256"), m("S, U, V")])
    return mine.to_hbm(ctx.tdma, HbmTensor[i32, m("Q"), m("S, U, V")])


Shard = DmTensor[i32, m("1"), m("G"), m("N"), m("W")]
Both = DmTensor[i32, m("1"), m("2"), m("N"), m("G, W")]


@device(chip=1)
def cluster_rs_ag_into(ctx: Context, x: HbmTensor[i32, m("1"), m("G, J, N, W")]) -> HbmTensor[i32, m("1"), m("H, G, N, W")]:
    full = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("G"), m("N"), m("J, W")])
    own = full.asymmetric_cluster_slice(ctx.sub, m("J"), m("W"), [0, 1])
    other = full.cluster_swap().cluster_slice(m("J"), m("W"), [0, 1]).to_dm(ctx.tdma, Shard)
    both = Both.new()
    _sum(ctx, own, other, "1", "W").view().to_dm_view(ctx.tdma, both.view_mut())
    mine = both.reshape(DmTensor[i32, m("1"), m("H"), m("N"), m("G, W")])
    return mine.to_hbm(ctx.tdma, HbmTensor[i32, m("1"), m("H, G, N, W")])
