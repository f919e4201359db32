"""RMSNorm in the Vector Engine: y[r, c] = x[r, c] / sqrt(mean_c x[r, c]^2 + eps) * g[c],
R = 8 rows of C = 64 f32, eps = 1e-6.

Four passes, reading operands from the VRF:
1. x itself is stored in the VRF, so the float multiplier can square the stream;
2. the row sums of x * x (an intra-slice reduce, `ADD` over `C`), committed to DM;
3. r = 1 / sqrt(sum / C + eps), computed as exp(-0.5 log(sum / C + eps)) (the engine's
   `LOG`, a multiply by -0.5 and `EXP`; no divide is needed), stored in the VRF;
4. x * r * g, one pass reading two VRF tensors (r per row, the gain g per column).
"""

from npu_opt import *

axes(R=8, C=64)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("1 # 256")


def _rows(begin):
    return (begin.fetch(m("R, C / 4"), m("C % 4"))
            .collect(m("R, C / 4"), m("C % 4 # 8"))
            .vector_init()
            .vector_intra_slice_tag(TagMode.ZERO)
            .vector_narrow_trim(m("C % 4")))


def _out(stream):
    return (stream.vector_widen_pad(m("C % 4 # 8"))
            .vector_final()
            .commit_trim(m("C % 4"))
            .commit(m("R, C")))


@device(chip=1)
def rmsnorm_kernel(ctx: Context, x: HbmTensor[f32, Chip, m("R, C")],
                   g: HbmTensor[f32, Chip, m("C")]) -> HbmTensor[f32, Chip, m("R, C")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("R, C")])
    g = g.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("C")])
    x_vrf = (ctx.sub.begin(x.view())
             .fetch(m("R, C / 8"), m("C % 8"))
             .collect(m("R, C / 8"), m("C % 8"))
             .to_vrf(m("R, C")))
    squares = (_rows(ctx.main.begin(x.view()))
               .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), x_vrf)
               .vector_intra_slice_reduce(m("C"), m("R"), m("1 # 4"), IntraSliceReduceOpF32.ADD)
               .vector_widen_pad(m("1 # 8"))
               .vector_final()
               .commit_trim(m("1 # 2"))
               .commit(m("R, 1 # 2")))
    r_vrf = (ctx.sub.begin(squares.view())
             .fetch(m("R"), m("1 # 2"))
             .collect(m("R"), m("1 # 8"))
             .vector_init()
             .vector_intra_slice_tag(TagMode.ZERO)
             .vector_narrow_trim(m("1 # 4"))
             .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), 1.0 / 64)   # the mean
             .vector_fp_binary(FpBinaryOp.ADD_F, 1e-6)                     # + eps
             .vector_fp_unary(FpUnaryOp.LOG)
             .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL1), -0.5)
             .vector_fp_unary(FpUnaryOp.EXP)                               # (mean + eps) ** -0.5
             .vector_widen_pad(m("1 # 8"))
             .vector_final()
             .to_vrf(m("R")))
    g_vrf = (ctx.sub.begin(g.view())
             .fetch(m("C / 8"), m("C % 8"))
             .collect(m("C / 8"), m("C % 8"))
             .to_vrf(m("C")))
    y = _out(_rows(ctx.main.begin(x.view()))
             .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL0), r_vrf)
             .vector_fp_binary(FpBinaryOp.MUL_F(FpMulAlu.MUL1), g_vrf))
    return y.to_hbm(ctx.tdma)
