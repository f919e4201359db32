"""Residual add of two f32 activations in DM (examples/residual_add.py): out = x + y.

S = 2048 tokens, 8 per slice on 256 slices; H = 64 features. `begin_interleaved` reads x
and y as one stream alternating along the size-2 axis I (innermost in time, so the two
tensors' flits alternate); `vector_intra_slice_unzip` splits the stream into group 0 (x)
and group 1 (y), and `vector_clip_zip(ClipBinaryOpF32.ADD)` adds them flit by flit in
one Vector Engine pass (IEEE f32 addition, round to nearest even).
"""

from npu_opt import *

axes(S=2048, H=64, I=2)

Chip = m("1")
Cluster = m("1 # 2")
Slice = m("S / 8")


@device(chip=1)
def residual_add_kernel(ctx: Context,
                        x: HbmTensor[f32, Chip, m("S, H")],
                        y: HbmTensor[f32, Chip, m("S, H")]) -> HbmTensor[f32, Chip, m("S, H")]:
    x = x.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("S % 8, H")])
    y = y.to_dm(ctx.tdma, DmTensor[f32, Chip, Cluster, Slice, m("S % 8, H")])
    out = (ctx.main.begin_interleaved(x.view(), y.view(), m("I"))
           .fetch(m("S % 8, H / 8, I"), m("H % 8"))         # x and y flits alternate
           .collect(m("S % 8, H / 8, I"), m("H % 8"))
           .vector_init()
           .vector_intra_slice_unzip(m("I"), m("S % 8, H / 8"))
           .vector_clip_zip(ClipBinaryOpF32.ADD)            # group 0 + group 1
           .vector_final()
           .commit_trim(m("H % 8"))
           .commit(m("S % 8, H")))
    return out.to_hbm(ctx.tdma, HbmTensor[f32, Chip, m("S, H")])
