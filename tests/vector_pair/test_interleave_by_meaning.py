"""INTERLEAVE-1 compares the two views by meaning: a DM element spelled `A, E / 8, E % 8`
is the layout `A, E`, so interleaving the two runs (cpu against numpy, visa bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403

axes(I=2, A=4, E=32)  # noqa: F405
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")  # noqa: F405
RNG = np.random.default_rng(53)


@device(chip=1)  # noqa: F405
def add_respelled(ctx: Context, x: HbmTensor[i32, Chip, m("A, E")],  # noqa: F405
                  y: HbmTensor[i32, Chip, m("A, E")]) -> HbmTensor[i32, Chip, m("A, E")]:  # noqa: F405
    xd = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, E")])  # noqa: F405
    yd = y.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("A, E / 8, E % 8")])  # noqa: F405
    s = (ctx.main.begin_interleaved(xd.view(), yd.view(), m("I"))
         .fetch(m("A, E / 8, I"), m("E % 8")).collect(m("A, E / 8, I"), m("E % 8")).vector_init()  # noqa: F405
         .vector_intra_slice_unzip(m("I"), m("A, E / 8, 1 # 2"), m("A, E / 8"))  # noqa: F405
         .vector_clip_zip(ClipBinaryOpI32.ADD_FXP))  # noqa: F405
    return s.vector_final().commit_trim(m("E % 8")).commit().to_hbm(ctx.tdma)  # noqa: F405


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_equivalent_views_interleave(backend):
    x, y = (RNG.integers(-1000, 1000, (4, 32)).astype(np.int32) for _ in range(2))
    np.testing.assert_array_equal(npu_opt.run(add_respelled, x, y, backend=backend), x + y)
