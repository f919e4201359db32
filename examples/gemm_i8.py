"""GEMM with i8 weights and activations, i32 result (examples/gemm_i8.py).

C[m, n] = sum_k A[m, k] * W[n, k] with M = N = 512, K = 128. The weight load is the
pattern that once broke the reference compiler: an identity `fetch_cast(i8)` and a
collect into 32-byte `K % 32` flits, stored into the TRF with two flits per beat
(RawInt8, Flit2). Integer sums are exact (i32, wrapping).
"""

from npu_opt import *

axes(M=512, N=512, K=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("M / 32, N / 32")

@device(chip=1)
def gemm_i8_kernel(ctx: Context,
                   a: HbmTensor[i8, Chip, m("M, K")],
                   w: HbmTensor[i8, Chip, m("N, K")]) -> HbmTensor[i32, Chip, m("M, N")]:
    a = a.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("M % 32, K")])
    w = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("N % 32, K")])
    w_trf = (ctx.sub.begin(w.view())
             .fetch(m("N % 8, N / 8 % 4"), m("K"))
             .fetch_cast(i8)                                   # identity: accepted, no conversion
             .collect(m("N % 8, N / 8 % 4, K / 32"), m("K % 32"))
             .to_trf(m("N % 8"), m("N / 8 % 4, K")))
    out = (ctx.main.begin(a.view())
           .fetch(m("M % 32, N / 8 % 4"), m("K"))
           .fetch_cast(i8)
           .collect(m("M % 32, N / 8 % 4, K / 32"), m("K % 32"))
           .contract_outer(w_trf, m("M % 32, N / 8 % 4, K / 64"), m("K % 64"))
           .contract_packet(m("1"))
           .contract_time(m("M % 32, N / 8 % 4"))
           .contract_lane(m("M % 32, N / 8 % 4"), m("N % 8"), LaneMode.INTERLEAVED)
           .commit_trim(m("N % 8"))                            # 8 x i32 = 32 bytes, no trim
           .commit(m("M % 32, N % 32")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("M, N")])
