"""A GEMM whose rows and columns are padded inside the kernel: 96 x 96 results laid out as a
128 x 128 tile (`M # 128`, `N # 128`) on 16 slices, the padding computed and never stored.
Each slice's DM holds 8 rows of `a` and all 128 (padded) rows of `w`, so `N # 128` is split
over the Slice level and the element level: a joint mapping whose factor form needs a table
too large to build (the cpu backend then keys its moves from the cells)."""

from npu_opt import *

axes(K=64, M=96, N=96)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M # 128 % 128 / 8, N # 128 % 128 / 128, 1 # 16")


@device(chip=1)
def padded_tile_gemm(ctx: Context,
                     a: HbmTensor[i8, Chip, m("M, K")],
                     w: HbmTensor[i8, Chip, m("N, K")],
                     out: Mut[HbmTensor[i32, Chip, m("M, N")]]) -> None:
    a_dm = a.view().to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M # 128 % 8, K")])
    w_dm = w.view().to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N # 128 % 128, K")])
    trf = (ctx.sub.begin(w_dm.view())
           .fetch(m("N # 128 % 8, N # 128 / 8"), m("K"))
           .collect(m("N # 128 % 8, N # 128 / 8, K / 32"), m("K % 32"))
           .to_trf(m("N # 128 % 8"), m("N # 128 / 8, K")))
    result = (ctx.main.begin(a_dm.view())
              .fetch(m("M # 128 % 8, N # 128 / 8"), m("K"))
              .collect(m("M # 128 % 8, N # 128 / 8, K / 32"), m("K % 32"))
              .contract_outer(trf, m("M # 128 % 8, N # 128 / 8, K / 32"), m("K % 32"))
              .contract_packet(m("1"))
              .contract_time(m("M # 128 % 8, N # 128 / 8"))
              .contract_lane(m("M # 128 % 8, N # 128 / 8"), m("N # 128 % 8"), LaneMode.INTERLEAVED)
              .commit_trim(m("N # 128 % 8"))
              .commit(m("M # 128 % 8, N # 128 % 128")))
    result.view().to_hbm_view(ctx.tdma, out.view_mut())
