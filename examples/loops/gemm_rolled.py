"""An i8 GEMM tiled in a rolled loop (examples/loops/gemm_rolled.py, docs/loops.md).

out[M, N] = a[M, K] . w[N, K] with i32 sums, M = 4 x 512, N = 2 x 512, K = 128. The two
512-row blocks of w go to the TRF once, before the loop. `for i in ctx.loop(MT)` is the
reference's plain `for`: its body, traced and compiled once, moves row block i of `a`
into DM (a tile at the runtime start i) and contracts it with each weight block. The
inner loop over the weight blocks is a Python `for`, unrolled as an `#[unroll] for`.
Each result tile goes through a tile of a write view of `out`, the caller's in-out tensor.
The artifact holds the body once, whatever MT is.
"""

from npu_opt import *

MT = 4                          # row tiles of the output: the rolled loop's trip count
NT = 2                          # column tiles: unrolled in the body
axes(M=512 * MT, N=512 * NT, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M % 512 / 32, N % 512 / 32")


def weight_block(ctx, w, j):
    """Row block j of w, in the TRF."""
    rows = w.view().tile(m("N / 512"), 1, m(f"1 # {NT}, N % 512, K"), j)
    w_dm = rows.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 32, K")])
    return (ctx.sub.begin(w_dm.view())
            .fetch(m("N % 8, N / 8 % 4"), m("K"))
            .fetch_cast(i8)
            .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
            .to_trf(m("N % 8"), m("N / 8 % 4, K")))


@device(chip=1)
def gemm_rolled(ctx: Context,
                a: HbmTensor[i8, Chip, m("M, K")],
                w: HbmTensor[i8, Chip, m("N, K")],
                out: Mut[HbmTensor[i32, Chip, m("M, N")]]) -> None:
    weights = [weight_block(ctx, w, j) for j in range(NT)]
    for i in ctx.loop(MT):
        rows = a.view().tile(m("M / 512"), 1, m(f"1 # {MT}, M % 512, K"), i)
        a_dm = rows.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
        for j in range(NT):
            tile = (ctx.main.begin(a_dm.view())
                    .fetch(m("M % 32, N / 8 % 4"), m("K"))
                    .fetch_cast(i8)
                    .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
                    .contract_outer(weights[j], m("M % 32, N / 8 % 4, K / 64"), m("K % 64"))
                    .contract_packet(m("1"))
                    .contract_time(m("M % 32, N / 8 % 4"))
                    .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
                    .commit_trim(m("N % 8"))
                    .commit(m("M % 32, N % 32")))
            dst = (out.view_mut()
                   .tile(m("N / 512"), 1, m(f"M, 1 #{{!}} {NT}, N % 512"), j)
                   .tile(m("M / 512"), 1, m(f"1 #{{!}} {MT}, M % 512, 1 #{{!}} {NT}, N % 512"), i))
            tile.view().to_hbm_view(ctx.tdma, dst)
