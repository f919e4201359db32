"""`reshape` of every tensor and view kind given the target type (issue 36 item 3):
`HbmTensorView.reshape(HbmTensorView[...])` and the write view's, cpu == visa == a numpy
oracle; a target of the other view form is TYPE-6."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *

axes(A=8, P=8, Q=8, E=64, R=4, B=32)

Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")
RNG = np.random.default_rng(363)


@device(chip=1)
def view_param_reshape(ctx: Context, x: HbmTensorView[i32, Chip, m("R, B")]) -> HbmTensor[i32, Chip, m("R, B")]:
    v = x.reshape(HbmTensorView[i32, Chip, m("R / 2, R % 2, B")])
    d = v.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("R / 2 # 64"), m("R % 2, B")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("R, B")])


@device(chip=1)
def view_mut_reshape(ctx: Context, x: HbmTensor[i32, Chip, m("R, B")],
                     out: HbmTensorViewMut[i32, Chip, m("R, B")]) -> None:
    d = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("R / 2 # 64"), m("R % 2, B")])
    d.view().to_hbm_view(ctx.tdma, out.reshape(HbmTensorViewMut[i32, Chip, m("R / 2, R % 2, B")]))


def test_hbm_views_reshape_to_their_view_type():
    x = RNG.integers(-2 ** 31, 2 ** 31, (4, 32)).astype(np.int32)
    a, v = (npu_opt.run(view_param_reshape, x, backend=bk) for bk in ("cpu", "visa"))
    assert np.array_equal(a, x) and a.tobytes() == v.tobytes()
    for bk in ("cpu", "visa"):
        out = np.zeros((4, 32), np.int32)
        npu_opt.run(view_mut_reshape, x, out, backend=bk)
        assert np.array_equal(out, x)


@device(chip=1)
def view_reshape_wrong_form(ctx: Context, x: HbmTensorView[i32, Chip, m("R, B")]) -> HbmTensor[i32, Chip, m("R, B")]:
    v = x.reshape(HbmTensorViewMut[i32, Chip, m("R / 2, R % 2, B")])
    d = v.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("R / 2 # 64"), m("R % 2, B")])
    return d.to_hbm(ctx.tdma, HbmTensor[i32, Chip, m("R, B")])


def test_a_read_view_reshaped_to_a_write_view_type_is_type_6():
    assert [d.code for d in view_reshape_wrong_form.trace().diagnostics][:1] == ["TYPE-6"]

