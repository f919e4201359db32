"""A Chip mapping that holds a digit of an axis the element also uses (`A / 4 % 4` with
element `A / 16, A % 4, B`): one leading host dimension per chip digit, cell [c, i, j, b]
is A = 16 i + 4 c + j; an inferred `to_hbm` layout lists the axis's other digits."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403

axes(A=64, B=16)  # noqa: F405
ChipA = m("A / 4 % 4")  # noqa: F405
RNG = np.random.default_rng(47)


@device(chip=4)  # noqa: F405
def relayout(ctx: Context, x: HbmTensor[i32, ChipA, m("A / 16, A % 4, B")]  # noqa: F405
             ) -> HbmTensor[i32, ChipA, m("A % 4, B, A / 16")]:  # noqa: F405
    return x.to_hbm(ctx.tdma, HbmTensor[i32, ChipA, m("A % 4, B, A / 16")])  # noqa: F405


@device(chip=4)  # noqa: F405
def add_one(ctx: Context, x: HbmTensor[i32, ChipA, m("A / 16, A % 4, B")]  # noqa: F405
            ) -> HbmTensor[i32, ChipA, m("A / 16, A % 4, B")]:  # noqa: F405
    d = x.to_dm(ctx.tdma, DmTensor[i32, ChipA, m("1 # 2"), m("A / 16 # 64"), m("A % 4, B")])  # noqa: F405
    y = (ctx.main.begin(d.view()).fetch(m("A % 4, B / 8"), m("B % 8"))  # noqa: F405
         .collect(m("A % 4, B / 8"), m("B % 8")).vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
         .vector_fxp(FxpBinaryOp.ADD_FXP, 1).vector_final().commit_trim(m("B % 8")).commit())  # noqa: F405
    return y.to_hbm(ctx.tdma)


def _by_axes(host):
    """The (|A|, |B|) array a [c, i, j, b] host array holds."""
    out = np.zeros((64, 16), host.dtype)
    for c in range(4):
        for i in range(4):
            for j in range(4):
                out[16 * i + 4 * c + j] = host[c, i, j]
    return out


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_split_chip_relayout(backend):
    x = RNG.integers(-1000, 1000, (4, 4, 4, 16)).astype(np.int32)
    got = npu_opt.run(relayout, x, backend=backend)
    assert got.shape == (4, 4, 16, 4)
    np.testing.assert_array_equal(got, x.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_split_chip_through_dm_with_an_inferred_result_layout(backend):
    x = RNG.integers(-1000, 1000, (4, 4, 4, 16)).astype(np.int32)
    got = npu_opt.run(add_one, x, backend=backend)
    assert got.shape == (4, 4, 4, 16)
    np.testing.assert_array_equal(_by_axes(got), _by_axes(x) + 1)
