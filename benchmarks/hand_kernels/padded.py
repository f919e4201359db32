"""A careful user's i8 GEMM of sizes no tile divides: out[300, 200] = a[300, 100] . w[200, 100],
i32 sums (benchmarks/bench_synth.py's baseline of the `padded` form).

The user pads the host arrays with zeros: M to 320 (ten 32-row blocks), K to 128 (whole
64-byte packets) and N to 256, so that a row of results is 1 KiB, whole 256-byte HBM
packets (224 columns would end each row in a partial write). Each of 10 slices computes a
32 x 256 block (w's 256 rows, 32 KiB, fill half its TRF); the slice grid's M axis is
padded to 16 positions and the rest of the cluster idles.
"""

from npu_opt import *

axes(M=320, N=256, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32 # 16, 1 # 16")


@device(chip=1)
def hand_padded(ctx: Context,
                a: HbmTensor[i8, Chip, m("M, K")],
                w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8"), m("K"))
             .collect(m("N % 8, N / 8, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8"), m("K"))
           .collect(m("M % 32, N / 8, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8"))
           .contract_lane(m("M % 32, N / 8"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
