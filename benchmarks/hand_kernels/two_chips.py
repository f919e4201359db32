"""A careful user's i8 GEMM over two chips: out[1024, 512] = a[1024, 128] . w[512, 128], i32
sums, chip c computing rows 512c..512c+511 (benchmarks/bench_synth.py's baseline of the
`two_chips` form, `--target rngd-2chip`; the host arrays have a leading chip dimension,
w given once per chip, as `synth.Contraction.pad` makes them).

On each chip a slice computes a 32 x 128 block of the chip's 512 x 512 (w's 128 rows in
the TRF): 16 x 4 slices, w moved to 16 rows of slices, 512-byte result rows.
"""

from npu_opt import *

axes(C=2, M=512, N=512, K=128)

Chip = m("C")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 128, 1 # 4")


@device(chip=2)
def hand_two_chips(ctx: Context,
                   a: HbmTensor[i8, Chip, m("M, K")],
                   w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 128, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 16"), m("K"))
             .collect(m("N % 8, N / 8 % 16, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 16, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 16"), m("K"))
           .collect(m("M % 32, N / 8 % 16, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 16, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 16"))
           .contract_lane(m("M % 32, N / 8 % 16"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))
           .commit(m("M % 32, N % 128")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
