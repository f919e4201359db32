"""A baseline for benchmarks/bench_synth.py: an i8 GEMV y[A] = M[A, B] . x[B] (A = B = 4096,
i32 results) making the mapping choices of furiosa-opt's hand-written `matmul_4096`
(examples crate, `matmul/matmul_4096.rs` at commit f8938cb), written here in npu-opt's DSL:

- the two clusters take the two halves of the rows; in a cluster, 2 x 128 slices hold
  1024 rows each times a 32-element slice of B (k split across 128 slices);
- x's 32 elements of each slice go to the TRF; each contraction step takes 2 rows x 32 of B
  (a 64-byte packet), the time loop walks the 512 row pairs;
- the 128 slices' partial sums are added by the inter-slice reducer.
The reference casts the sums to i8; this baseline keeps them i32, as synth's GEMV does.
"""

from npu_opt import *

axes(A=4096, B=4096)

Chip = m("1")
Cluster = m("A / 2048 % 2")
Slice = m("A / 1024 % 2, B / 32")


@device(chip=1)
def ref_gemv_i8(ctx: Context,
                matrix: HbmTensor[i8, Chip, m("A, B")],
                vector: HbmTensor[i8, Chip, m("B")]) -> HbmTensor[i32, Chip, m("A")]:
    matrix = matrix.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("A % 1024, B % 32")])
    vector = vector.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("B % 32")])
    trf = (ctx.sub.begin(vector.view())
           .fetch(m("1"), m("B % 32"))
           .collect(m("1"), m("B % 32"))
           .to_trf())
    sums = (ctx.main.begin(matrix.view())
            .fetch(m("A % 1024"), m("B % 32"))
            .collect(m("A % 1024"), m("B % 32"))
            .contract_outer(trf, m("A / 2 % 512"), m("A % 2, B % 32"))
            .contract_packet(m("A % 2"))
            .contract_time(m("A / 2 % 512"))
            .contract_lane(m("A / 2 % 512"), m("A % 2 # 8"), LaneMode.SEQUENTIAL)
            .vector_init()
            .vector_inter_slice_reduce(m("A / 1024 % 2, 1 # 128"), m("A / 2 % 512"), InterSliceReduceOpI32.ADD)
            .vector_final()
            .commit_trim(m("A % 2"))
            .commit())
    return sums.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("A")])
