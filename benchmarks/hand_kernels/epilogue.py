"""A careful user's i8 GEMM with an epilogue: q[M, N] = requant(relu(a[M, K] . w[N, K] + b[N]),
2^-10), M = N = 512, K = 128, i8 results (benchmarks/bench_synth.py's baseline of the
`epilogue` form; the pass is the one docs/synth.md gives).

i8 results make 128-column rows 128 bytes, a partial HBM write each; 256 columns make
them one whole 256-byte packet. So a slice computes a 32 x 256 block (w's 256 rows, 32 KiB,
in the TRF; b's 256 values in the VRF), 16 x 2 slices (32 of a cluster's 256) cover the
result, and w moves to 16 rows of slices only.
"""

from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 256, 1 # 8")


@device(chip=1)
def hand_epilogue(ctx: Context,
                  a: HbmTensor[i8, Chip, m("M, K")],
                  w: HbmTensor[i8, Chip, m("N, K")],
                  b: HbmTensor[i32, Chip, m("N")]) -> HbmTensor[i8, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 256, K")])
    b = b.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("N % 256")])
    b_vrf = (ctx.sub.begin(b.view())
             .fetch(m("N / 8 % 32"), m("N % 8"))
             .collect(m("N / 8 % 32"), m("N % 8"))
             .to_vrf(m("N % 256")))
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 32"), m("K"))
             .collect(m("N % 8, N / 8 % 32, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 32, K")))
    q = (ctx.main.begin(a.view())
         .fetch(m("M % 32, N / 8 % 32"), m("K"))
         .collect(m("M % 32, N / 8 % 32, K / 32"), m("K % 32"))
         .contract_outer(w_trf, m("M % 32, N / 8 % 32, K / 64"), m("K % 64"))
         .contract_packet(m("1"))
         .contract_time(m("M % 32, N / 8 % 32"))
         .contract_lane(m("M % 32, N / 8 % 32"), m("N % 8"), LaneMode.INTERLEAVED)
         .vector_init()
         .vector_intra_slice_tag(TagMode.ZERO)
         .vector_fxp(FxpBinaryOp.ADD_FXP, b_vrf)          # + b (wrapping i32)
         .vector_fxp(FxpBinaryOp.MUL_FXP, 2097152)        # x 2^-10 as Q31, rounded half up
         .vector_clip(ClipBinaryOpI32.MAX, 0)             # ReLU, the i8 floor
         .vector_clip(ClipBinaryOpI32.MIN, 127)
         .vector_final()
         .cast(i8, m("N % 8 # 32"))
         .commit_trim(m("N % 8"))
         .commit(m("M % 32, N % 256")))
    return q.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("M, N")])
