"""A padded axis staged between HBM and DM in one layout whose digits the DM splits over
Slice and Element in another order than the axis's own (transposed: `R # 8 % 4` over Slice,
`R # 8 / 4` in Element), or with another axis between them (`R # 16 / 8, Y, R # 16 / 2 % 4`
over Slice, `R # 16 % 2` in Element): the book's vcg-interface layouts (reduce_transposed,
reduce_multi_level). The HBM side joins the padded axis into one ragged piece, which the DM's
digit ranges lay out cell for cell, padding onto padding; both were DMA-4 ("overlaps a ragged
memory piece"). A round trip keeps every live cell; cpu == visa."""


import numpy as np
import pytest

import npu_opt
from npu_opt import Context, DmTensor, HbmTensor, axes, device, i32, m
from tu_ops import rngd
from visa.verify import verify_text

axes(TR=5, TX=64, TQ=2, UR=11, UY=32)
TRANSPOSED = ("TX, TR # 8 % 4", "TR # 8 / 4, TQ")
INTERLEAVED = ("UR # 16 / 8, UY, UR # 16 / 2 % 4", "UR # 16 % 2, TQ")


def _round_trip(slice_, element):
    hbm = HbmTensor[i32, m("1"), m(f"{slice_}, {element}")]

    @device(chip=1)
    def round_trip(ctx: Context, x: hbm) -> hbm:
        d = x.to_dm(ctx.tdma, DmTensor[i32, m("1"), m("1"), m(slice_), m(element)])
        return d.to_hbm(ctx.tdma, hbm)
    return round_trip


def _transposed_host(live):   # live[x, r, q] (r < 5) -> host[x, r % 4, r / 4, q], zeros past |R|
    out = np.zeros((64, 4, 2, 2), np.int32)
    for r in range(5):
        out[:, r % 4, r // 4] = live[:, r]
    return out, (out != 0) | np.isin(np.arange(8).reshape(2, 4).T, range(5))[None, :, :, None]


def _interleaved_host(live):  # live[r, y, q] (r < 11) -> host[r / 8, y, r / 2 % 4, r % 2, q]
    out = np.zeros((2, 32, 4, 2, 2), np.int32)
    mask = np.zeros(out.shape, bool)
    for r in range(11):
        out[r // 8, :, r // 2 % 4, r % 2] = live[r]
        mask[r // 8, :, r // 2 % 4, r % 2] = True
    return out, mask


RNG = np.random.default_rng(21)
CASES = {
    "transposed": (TRANSPOSED, _transposed_host(RNG.integers(-2**31, 2**31, (64, 5, 2)).astype(np.int32))),
    "interleaved": (INTERLEAVED, _interleaved_host(RNG.integers(-2**31, 2**31, (11, 32, 2)).astype(np.int32))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_padded_axis_split_out_of_order_round_trips(name):
    (slice_, element), (x, live) = CASES[name]
    kernel = _round_trip(slice_, element)
    assert npu_opt.check(kernel).ok, [d.render() for d in npu_opt.check(kernel).diagnostics]
    verify_text(npu_opt.compile(kernel).text, rngd())  # the commands move the padded runs whole
    cpu, visa = npu_opt.run(kernel, x), npu_opt.run(kernel, x, backend="visa")
    np.testing.assert_array_equal(cpu, visa)
    np.testing.assert_array_equal(cpu[live], x[live])
