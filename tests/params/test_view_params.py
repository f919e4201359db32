"""View parameters arrive as views (tiled, copied into), a whole view parameter is a
`to_hbm` destination, `t.reshape(..).view()` spells a reshaped read view, and a returned
bare `to_hbm` takes its annotation's terms for the host array."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *
from tests.params.data import BACKENDS, i8_array

axes(R=16, S=8)

One = m("1")
Rows = DmTensor[i8, One, m("1 # 2"), m("R # 64"), m("S")]
RNG = np.random.default_rng(29)


@device(chip=1)
def swap_halves(ctx: Context, src: HbmTensorView[i8, One, m("R, S")],
                dst: HbmTensorViewMut[i8, One, m("R, S")]) -> None:
    """dst[:8] = src[8:], dst[8:] = src[:8], one tile at a time."""
    for half in range(2):
        piece = src.tile(m("R / 8"), 1, m("R % 8 # 16, S"), half)
        piece.to_hbm_view(ctx.tdma, dst.tile(m("R / 8"), 1, m("R % 8 #{!} 16, S"), 1 - half))


@device(chip=1)
def fill_view(ctx: Context, src: HbmTensor[i8, One, m("R, S")], dst: HbmTensorViewMut[i8, One, m("S, R")]) -> None:
    """dst = src transposed, through `to_hbm` into the whole view parameter."""
    src.to_dm(ctx.tdma, Rows).to_hbm(ctx.tdma, dst)


@device(chip=1)
def read_only_into(ctx: Context, src: HbmTensor[i8, One, m("R, S")], dst: HbmTensorView[i8, One, m("R, S")]) -> None:
    src.to_dm(ctx.tdma, Rows).to_hbm(ctx.tdma, dst)


@device(chip=1)
def regroup(ctx: Context, src: HbmTensor[i8, One, m("R, S")]) -> HbmTensor[i8, One, m("R / 4, R % 4, S")]:
    """A reshaped tensor read through `.view()`, returned under a regrouped annotation."""
    flat = src.reshape(One, m("R / 4, R % 4, S")).view()
    return flat.to_dm(ctx.tdma, DmTensor[i8, One, m("1 # 2"), m("R / 4 # 64"), m("R % 4, S")]).to_hbm(ctx.tdma)


@device(chip=1)
def regroup_return(ctx: Context, src: HbmTensor[i8, One, m("R, S")]) -> HbmTensor[i8, One, m("R / 2, R % 2, S")]:
    return src.to_dm(ctx.tdma, Rows).to_hbm(ctx.tdma)


@pytest.mark.parametrize("backend", BACKENDS)
def test_view_parameters_are_tiled_and_written(backend):
    src, dst = i8_array(RNG, 16, 8), np.zeros((16, 8), np.int8)
    npu_opt.run(swap_halves, src, dst, backend=backend)
    np.testing.assert_array_equal(dst, np.concatenate([src[8:], src[:8]]))


def test_a_whole_write_view_parameter_is_a_to_hbm_destination():
    src, dst = i8_array(RNG, 16, 8), np.zeros((8, 16), np.int8)
    npu_opt.run(fill_view, src, dst)
    np.testing.assert_array_equal(dst, src.T)


def test_a_read_view_parameter_is_not_written():
    report = npu_opt.check(read_only_into)
    assert not report.ok and [d.code for d in report.diagnostics] == ["PARAM-1"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_reshape_then_view_and_the_annotated_host_shape(backend):
    src = i8_array(RNG, 16, 8)
    out = npu_opt.run(regroup, src, backend=backend)
    assert out.shape == (4, 4, 8)
    np.testing.assert_array_equal(out, src.reshape(4, 4, 8))


def test_a_returned_to_hbm_takes_the_annotations_terms():
    src = i8_array(RNG, 16, 8)
    out = npu_opt.run(regroup_return, src)
    assert out.shape == (8, 2, 8)
    np.testing.assert_array_equal(out, src.reshape(8, 2, 8))
