"""Leaky ReLU of f32 activations by a comparison tag (examples/leaky_relu.py):
out = x * 0.01 where x < 0, else x.

S = 2048 tokens, 8 per slice on 256 slices; H = 64 features, four per 4-way packet. The tag
unit sets bit 0 of each element's execution id where `x < 0.0` (`TagMode.COMPARISON`); the
multiply takes a branched operand whose one slot is guarded by that bit, so the other
elements pass through unchanged. (examples/masked_softmax.py puts such a mask in front of
the intra-slice reducers.)
"""

from npu_opt import *

axes(S=2048, H=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("S / 8")
NEGATIVE = TagGuard.matches([BitReq.ONE, BitReq.IGNORE, BitReq.IGNORE, BitReq.IGNORE])  # bit 0: x < 0


@device(chip=1)
def leaky_relu_kernel(ctx: Context, x: HbmTensor[f32, Chip, m("S, H")]) -> HbmTensor[f32, Chip, m("S, H")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("S % 8, H")])
    out = (ctx.main.begin(x.view())
           .fetch(m("S % 8, H / 4"), m("H % 4"))
           .collect(m("S % 8, H / 4"), m("H % 4 # 8"))
           .vector_init()
           .vector_intra_slice_tag(TagMode.COMPARISON([Cmp.LESS(0.0), Cmp.FALSE, Cmp.FALSE, Cmp.FALSE]))
           .vector_narrow_trim(m("H % 4"))
           .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), Branched.imm(NEGATIVE, 0.01))
           .vector_widen_pad(m("H % 4 # 8"))
           .vector_final()
           .commit_trim(m("H % 4"))
           .commit(m("S % 8, H")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("S, H")])
