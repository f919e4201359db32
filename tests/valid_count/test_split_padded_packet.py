"""A padded axis in Packet (`R # 16 % 8`, |R| = 10) split 8 -> 4-way before an intra-slice reduce:
the split's packet is the axis's inner digit `R # 16 % 4`, which the Valid Count Generator counts
beside the time `R # 16 / 4`. The record's re-derivation normalized it to `R = 4` (R past |R|
beside that time) and the lowering crashed (an internal error); cpu == visa == numpy."""

from __future__ import annotations

import numpy as np

import npu_opt
from npu_opt import Context, DmTensor, HbmTensor, IntraSliceReduceOpF32, TagMode, axes, device, f32, m

axes(SR=10, SX=256)


@device(chip=1)
def split_sum(ctx: Context, x: HbmTensor[f32, m("1"), m("SX, SR # 16 / 8, SR # 16 % 8")]
              ) -> HbmTensor[f32, m("1"), m("SX, 1 # 2")]:
    d = x.to_dm(ctx.tdma, DmTensor[f32, m("1"), m("1"), m("SX"), m("SR # 16 / 8, SR # 16 % 8")])
    y = (ctx.main.begin(d.view()).fetch(m("SR # 16 / 8"), m("SR # 16 % 8")).collect(m("SR # 16 / 8"), m("SR # 16 % 8"))
         .vector_init().vector_intra_slice_tag(TagMode.ZERO)
         .vector_narrow_split(m("SR # 16 / 4"), m("SR # 16 % 4"))
         .vector_intra_slice_reduce(m("SR"), m("1"), m("1 # 4"), IntraSliceReduceOpF32.ADD)
         .vector_widen_pad(m("1 # 8")).vector_final().commit_trim(m("1 # 2")).commit(m("1 # 2")))
    return y.to_hbm(ctx.tdma, HbmTensor[f32, m("1"), m("SX, 1 # 2")])


def test_a_split_padded_packet_reduces_its_live_cells_on_cpu_and_visa():
    rng = np.random.default_rng(9)
    live = rng.integers(-1000, 1000, (256, 10)).astype(np.float32)  # integers: every partial sum exact
    x = np.zeros((256, 2, 8), np.float32)
    x.reshape(256, 16)[:, :10] = live
    cpu, visa = npu_opt.run(split_sum, x), npu_opt.run(split_sum, x, backend="visa")
    np.testing.assert_array_equal(cpu.view(np.uint32), visa.view(np.uint32))
    np.testing.assert_array_equal(cpu[:, 0], live.astype(np.float64).sum(1).astype(np.float32))
