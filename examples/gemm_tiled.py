"""A bf16 GEMM larger than one pass (examples/gemm_tiled.py): a Python loop over output tiles.

out[M, N] = a[M, K] . w[N, K] with M = N = 1024: MT x NT = 2 x 2 output tiles of 512 x 512, each one pass
of the contraction of examples/gemm_bf16.py. For tile (i, j) the loop moves row block i of
`a` and row block j of `w` into DM through tiles of read views (`dma_window`), contracts
them, and writes the f32 result through a tile of a write view of `out`, the caller's
in-out tensor (`Mut[...]`, written in place by `npu_opt.run`; `dma_into`). The tile starts
are the Python loop variables.
"""

from npu_opt import *

MT = 2                          # row tiles of the output
NT = 2                          # column tiles of the output
axes(M=512 * MT, N=512 * NT, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M % 512 / 32, N % 512 / 32")

@device(chip=1)
def gemm_tiled(ctx: Context,
               a: HbmTensor[bf16, Chip, m("M, K")],
               w: HbmTensor[bf16, Chip, m("N, K")],
               out: Mut[HbmTensor[f32, Chip, m("M, N")]]) -> None:
    for i in range(MT):
        a_rows = a.view().tile(m("M / 512"), 1, m(f"1 # {MT}, M % 512, K"), i)
        a_dm = a_rows.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("M % 32, K")])
        for j in range(NT):
            w_rows = w.view().tile(m("N / 512"), 1, m(f"1 # {NT}, N % 512, K"), j)
            w_dm = w_rows.to_dm(ctx.tdma, DmTensor[bf16, Chip, Cluster, Slice, m("N % 32, K")])
            w_trf = (ctx.sub.begin(w_dm.view())
                     .fetch(m("N % 8, N / 8 % 4"), m("K"))
                     .collect(m("N % 8, N / 8 % 4, K / 16"), m("K % 16"))
                     .to_trf(m("N % 8"), m("N / 8 % 4, K")))
            tile = (ctx.main.begin(a_dm.view())
                    .fetch(m("M % 32, N / 8 % 4"), m("K"))
                    .collect(m("M % 32, N / 8 % 4, K / 16"), m("K % 16"))
                    .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
                    .contract_packet(m("1"))
                    .contract_time(m("M % 32, N / 8 % 4"))
                    .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
                    .commit_trim(m("N % 8"))
                    .commit(m("M % 32, N % 32")))
            dst = (out.view_mut()
                   .tile(m("M / 512"), 1, m(f"1 #{{!}} {MT}, M % 512, N"), i)
                   .tile(m("N / 512"), 1, m(f"1 #{{!}} {MT}, M % 512, 1 #{{!}} {NT}, N % 512"), j))
            tile.view().to_hbm_view(ctx.tdma, dst)
