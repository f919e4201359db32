"""A row-wise softmax in the Vector Engine: y[r, c] = exp(x[r, c] - m[r] - log s[r]),
m[r] = max_c x[r, c], s[r] = sum_c exp(x[r, c] - m[r]); R = 8 rows of C = 64 f32.

Four passes, the operands of the later ones read from the VRF:
1. the row max, an intra-slice reduce (`MAX` over `C`), stored in the VRF;
2. the row sums of exp(x - max), committed to DM;
3. c = log(s) + max on those sums, stored in the VRF (no divide is needed:
   exp(x - max - log s) = exp(x - max) / s);
4. y = exp(x - c).
"""

from npu_opt import *

axes(R=8, C=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")

@device(chip=1)
def softmax_rows_kernel(ctx: Context, x: HbmTensor[f32, Chip, m("R, C")]) -> HbmTensor[f32, Chip, m("R, C")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("R, C")])

    def rows(ctx_):
        return (ctx_.begin(x.view())
                .fetch(m("R, C / 4"), m("C % 4"))
                .collect(m("R, C / 4"), m("C % 4 # 8"))
                .vector_init()
                .vector_intra_slice_tag(TagMode.ZERO)
                .vector_narrow_trim(m("C % 4")))

    row_max = (rows(ctx.sub)
               .vector_intra_slice_reduce(m("C"), m("R"), m("1 # 4"), IntraSliceReduceOpF32.MAX)
               .vector_widen_pad(m("1 # 8"))
               .vector_final()
               .to_vrf(m("R")))
    sums = (rows(ctx.main)
            .vector_fp_binary(FpBinaryOp.SUB_F, row_max)
            .vector_fp_unary(FpUnaryOp.EXP)
            .vector_intra_slice_reduce(m("C"), m("R"), m("1 # 4"), IntraSliceReduceOpF32.ADD)
            .vector_widen_pad(m("1 # 8"))
            .vector_final()
            .commit_trim(m("1 # 2"))
            .commit(m("R, 1 # 2")))
    shift = (ctx.sub.begin(sums.view())
             .fetch(m("R"), m("1 # 2"))
             .collect(m("R"), m("1 # 8"))
             .vector_init()
             .vector_intra_slice_tag(TagMode.ZERO)
             .vector_narrow_trim(m("1 # 4"))
             .vector_fp_unary(FpUnaryOp.LOG)
             .vector_fp_binary(FpBinaryOp.ADD_F, row_max)
             .vector_widen_pad(m("1 # 8"))
             .vector_final()
             .to_vrf(m("R")))
    y = (rows(ctx.main)
         .vector_fp_binary(FpBinaryOp.SUB_F, shift)
         .vector_fp_unary(FpUnaryOp.EXP)
         .vector_widen_pad(m("C % 4 # 8"))
         .vector_final()
         .commit_trim(m("C % 4"))
         .commit(m("R, C")))
    return y.to_hbm(ctx.tdma)
