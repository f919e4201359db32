"""Row sums of an i8 matrix in i32 (examples/row_sum.py): y[i] = sum_j x[i, j] * ones[j].

I = 2048 rows, 8 per slice on 256 slices; J = 128. The sum is a contraction against a
vector held in the TRF (all ones, or any i8 weights: then it is a GEMV with i32 output).
It exercises LaneMode.SEQUENTIAL, a time reduction over an outer factor (J / 64), and the
8-byte minimum commit.
"""

from npu_opt import *

axes(I=2048, J=128)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("I / 8")

@device(chip=1)
def row_sum_kernel(ctx: Context,
                   x: HbmTensor[i8, Chip, m("I, J")],
                   ones: HbmTensor[i8, Chip, m("J")]) -> HbmTensor[i32, Chip, m("I")]:
    x = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("I % 8, J")])
    ones = ones.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, Slice, m("J")])   # broadcast to every slice
    ones_trf = (ctx.sub.begin(ones.view())
                .fetch(m("1"), m("J"))
                .collect(m("J / 32"), m("J % 32"))
                .to_trf(m("1"), m("J")))                # default inference would give the same
    out = (ctx.main.begin(x.view())
           .fetch(m("J / 64, I % 8"), m("J % 64"))
           .collect(m("J / 64, I % 8, J / 32 % 2"), m("J % 32"))
           .contract_outer(ones_trf, m("J / 64, I % 8"), m("J % 64"))
           .contract_packet(m("1"))                     # depth 6: 64 products
           .contract_time(m("I % 8"))                   # J / 64 (outermost) summed: IT = 8
           .contract_lane(m("I % 8"), m("1 # 8"), LaneMode.SEQUENTIAL)
           .commit_trim(m("1 # 2"))                     # 2 x i32 = 8 bytes
           .commit(m("I % 8, 1 # 2")))
    return out.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("I")])
