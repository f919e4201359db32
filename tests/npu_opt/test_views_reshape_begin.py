"""The two VIEW-10 cases ported kernels met, now lowered: a `begin` over a reshaped DM view
(the slices regrouped, no offset: fed in place) and a 4-bit `memset` of a whole DM tensor
(whole bytes), each on cpu against numpy and on visa bit for bit equal to cpu."""

from __future__ import annotations

import numpy as np

from npu_opt import *
from tests.npu_opt.test_views import both

axes(A=64, B=32, G=8, J=8)

Chip = m("1")
Cluster = m("1 # 2")


@device(chip=1)
def regrouped(ctx: Context, x: HbmTensor[i8, Chip, m("A, B")]) -> HbmTensor[i8, Chip, m("J, G, B")]:
    """Slices `A` relabelled `G, J`; the feed reads them where they lie, the output swaps them."""
    d = x.to_dm(ctx.tdma, DmTensor[i8, Chip, Cluster, m("A"), m("B")])
    v = d.view().reshape(Chip, Cluster, m("G, J"), m("B"))
    out = ctx.main.begin(v).fetch(m("1"), m("B")).collect(m("B / 32"), m("B % 32")).commit_trim(m("B % 32")).commit(m("B"))
    return out.to_hbm(ctx.tdma, HbmTensor[i8, Chip, m("J, G, B")])


@device(chip=1)
def all_minus_one(ctx: Context, x: HbmTensor[i4, Chip, m("A, B")]) -> HbmTensor[i4, Chip, m("A / 2, A % 2, B")]:
    d = x.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, m("A"), m("B")])
    d.view_mut().memset(ctx.sub, -1)
    return d.to_hbm(ctx.tdma, HbmTensor[i4, Chip, m("A / 2, A % 2, B")])


def test_a_begin_over_a_reshaped_dm_view_is_fed_in_place():
    x = np.random.default_rng(5).integers(-128, 128, (64, 32)).astype(np.int8)
    want = x.reshape(8, 8, 32).transpose(1, 0, 2)
    assert np.array_equal(both(regrouped, x), want)


def test_a_4_bit_memset_of_a_whole_dm_tensor_fills_every_cell():
    x = np.random.default_rng(6).integers(0, 8, (64, 32)).astype(np.int8)   # i4 values, no -1 before
    got = both(all_minus_one, x)
    assert got.shape == (32, 2, 32) and (got == -1).all()
