"""The two int8 GEMMs of a small MLP (examples/interop/quantized_mlp.py), each one pass.

`make_up(scale)`: h[m, h] = requant(relu(x[m, d] . w1[h, d] + b1[h]), scale), i8 out;
`mlp_down`: y[m, d] = h[m, k] . w2[d, k] + b2[d], i32 out. M = 256 tokens, D = 64 model
features, H = 256 hidden features. Both were first written by `npu-opt synth` (placement
8 x 128 results per slice, the weights in the TRF) and then shortened by hand: one tile
covers each result, so the tile helpers are gone. The result is an in-out array
(`Mut[...]`), as synth emits it.
"""

from npu_opt import *

axes(M=256, D=64, H=256)

Chip = m("1")
Cluster = m("1 # 2")
UpSlice = m("M / 8, H / 128, 1 # 4")           # 32 x 2 slices of 8 x 128 results, on 1/4 of the chip
DownSlice = m("M / 8, D # 128 / 128, 1 # 8")   # 32 slices of 8 x 64 results (rows padded to 128)


def make_up(scale: float = 2**-9):
    """The first layer with its requantization `scale` (0 < scale <= 1) baked in: the Vector
    Engine multiplies the i32 sums by the Q31 constant round(scale * 2**31)."""
    q31 = round(scale * 2**31)

    @device(chip=1)
    def mlp_up(ctx: Context,
               x: HbmTensor[i8, Chip, m("M, D")],
               w: HbmTensor[i8, Chip, m("H, D")],
               b: HbmTensor[i32, Chip, m("H")],
               h: Mut[HbmTensor[i8, Chip, m("M, H")]]) -> None:
        x_dm = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, UpSlice, m("M % 8, D")])
        w_dm = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, UpSlice, m("H % 128, D")])
        w_trf = (ctx.sub.begin(w_dm.view())       # each slice's 128 weight rows, 8 lanes x 16
                 .fetch(m("H % 8, H / 8 % 16"), m("D"))
                 .collect(m("H % 8, H / 8 % 16, D / 32"), m("D % 32"))
                 .to_trf(m("H % 8"), m("H / 8 % 16, D")))
        b_dm = b.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, UpSlice, m("H % 128")])
        b_vrf = (ctx.sub.begin(b_dm.view())       # the bias of the slice's columns, in its VRF
                 .fetch(m("H / 8 % 16"), m("H % 8"))
                 .collect(m("H / 8 % 16"), m("H % 8"))
                 .to_vrf(m("H % 128")))
        out = (ctx.main.begin(x_dm.view())
               .fetch(m("M % 8, H / 8 % 16"), m("D"))
               .collect(m("M % 8, H / 8 % 16, D / 32"), m("D % 32"))
               .contract_outer(w_trf, m("M % 8, H / 8 % 16, D / 32"), m("D % 32"))
               .contract_packet(m("1"))
               .contract_time(m("M % 8, H / 8 % 16"))
               .contract_lane(m("M % 8, H / 8 % 16"), m("H % 8"), LaneMode.INTERLEAVED)
               .vector_init()
               .vector_intra_slice_tag(TagMode.ZERO)
               .vector_fxp(FxpBinaryOp.ADD_FXP, b_vrf)    # + b1 (wrapping i32)
               .vector_fxp(FxpBinaryOp.MUL_FXP, q31)      # x * scale, rounded half up
               .vector_clip(ClipBinaryOpI32.MAX, 0)       # ReLU
               .vector_clip(ClipBinaryOpI32.MIN, 127)     # the i8 range's top
               .vector_final()
               .cast(i8, m("H % 8 # 32"))                 # exact: the clips kept the values in range
               .commit_trim(m("H % 8"))
               .commit(m("M % 8, H % 128")))
        out.view().to_hbm_view(ctx.tdma, h.view_mut())

    return mlp_up


mlp_up = make_up()


@device(chip=1)
def mlp_down(ctx: Context,
             h: HbmTensor[i8, Chip, m("M, H")],
             w: HbmTensor[i8, Chip, m("D, H")],
             b: HbmTensor[i32, Chip, m("D")],
             y: Mut[HbmTensor[i32, Chip, m("M, D")]]) -> None:
    h_dm = h.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, DownSlice, m("M % 8, H")])
    w_dm = w.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, DownSlice, m("D # 128, H")])
    w_trf = (ctx.sub.begin(w_dm.view())
             .fetch(m("D # 128 % 8, D # 128 / 8 % 16"), m("H"))
             .collect(m("D # 128 % 8, D # 128 / 8 % 16, H / 32"), m("H % 32"))
             .to_trf(m("D # 128 % 8"), m("D # 128 / 8 % 16, H")))
    b_dm = b.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, DownSlice, m("D # 128")])
    b_vrf = (ctx.sub.begin(b_dm.view())
             .fetch(m("D # 128 / 8 % 16"), m("D # 128 % 8"))
             .collect(m("D # 128 / 8 % 16"), m("D # 128 % 8"))
             .to_vrf(m("D # 128")))
    out = (ctx.main.begin(h_dm.view())
           .fetch(m("M % 8, D # 128 / 8 % 16"), m("H"))
           .collect(m("M % 8, D # 128 / 8 % 16, H / 32"), m("H % 32"))
           .contract_outer(w_trf, m("M % 8, D # 128 / 8 % 16, H / 32"), m("H % 32"))
           .contract_packet(m("1"))
           .contract_time(m("M % 8, D # 128 / 8 % 16"))
           .contract_lane(m("M % 8, D # 128 / 8 % 16"), m("D # 128 % 8"), LaneMode.INTERLEAVED)
           .vector_init()
           .vector_intra_slice_tag(TagMode.ZERO)
           .vector_fxp(FxpBinaryOp.ADD_FXP, b_vrf)        # + b2
           .vector_final()
           .commit_trim(m("D # 128 % 8"))
           .commit(m("M % 8, D # 128")))
    out.view().to_hbm_view(ctx.tdma, y.view_mut())
