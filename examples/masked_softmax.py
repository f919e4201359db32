"""A masked row-wise softmax in the Vector Engine: the cells of a row below THRESHOLD are
masked out, by a comparison tag, and the softmax runs over the kept cells alone:

    y[r, c] = exp(x[r, c] - m[r]) / s[r]   where x[r, c] >= THRESHOLD, else 0,
    m[r] = max of the kept x[r, c],   s[r] = sum of the kept exp(x[r, c] - m[r]).

R = 8 rows of C = 64 f32 (every row needs a kept cell: a row with none has no max). Each
tagged pass sets bit 0 of an element's execution id where `x < THRESHOLD`; a multiply or add
whose operand is `Branched.imm(MASKED, v)` then touches those elements only. Four passes:
1. the masked row max: masked cells become -inf (x + -inf), an intra-slice `MAX` over `C`,
   stored in the VRF;
2. the row sums of exp(x - max), the masked cells' terms multiplied by 0, committed to DM;
3. c = log(s) + max on those sums, stored in the VRF (exp(x - c) = exp(x - max) / s);
4. y = exp(x - c), the masked cells multiplied by 0.
"""

from npu_opt import *

axes(R=8, C=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")
THRESHOLD = -2.0
MASK = TagMode.COMPARISON([Cmp.LESS(THRESHOLD), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE])
MASKED = TagGuard.matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])  # bit 0: x < THRESHOLD


@device(chip=1)
def masked_softmax_kernel(ctx: Context, x: HbmTensor[f32, Chip, m("R, C")]) -> HbmTensor[f32, Chip, m("R, C")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("R, C")])

    def masked_rows(ctx_):
        return (ctx_.begin(x.view())
                .fetch(m("R, C / 4"), m("C % 4"))
                .collect(m("R, C / 4"), m("C % 4 # 8"))
                .vector_init()
                .vector_intra_slice_tag(MASK)
                .vector_narrow_trim(m("C % 4")))

    row_max = (masked_rows(ctx.sub)
               .vector_fp_binary(FpBinaryOp.ADD_F, Branched.imm(MASKED, float("-inf")))
               .vector_intra_slice_reduce(m("C"), m("R"), m("1 # 4"), IntraSliceReduceOpF32.MAX)
               .vector_widen_pad(m("1 # 8"))
               .vector_final()
               .to_vrf(m("R")))
    sums = (masked_rows(ctx.main)
            .vector_fp_binary(FpBinaryOp.SUB_F, row_max)
            .vector_fp_unary(FpUnaryOp.EXP)
            .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), Branched.imm(MASKED, 0.0))
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
    y = (masked_rows(ctx.main)
         .vector_fp_binary(FpBinaryOp.SUB_F, shift)
         .vector_fp_unary(FpUnaryOp.EXP)
         .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), Branched.imm(MASKED, 0.0))
         .vector_widen_pad(m("C % 4 # 8"))
         .vector_final()
         .commit_trim(m("C % 4"))
         .commit(m("R, C")))
    return y.to_hbm(ctx.tdma)
