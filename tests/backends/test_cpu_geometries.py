"""Contraction geometries beyond the examples (tests/backends/kernels_shapes.py), with
special bf16 values: pack = 1, a depth-1 tree with padded columns, the sequential lane
fold, a TRF-only time broadcast (tiling 2) and a reduced outer time factor (IT = 2)."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from npu_opt.run import run
from tests.backends import kernels_shapes as k
from tests.backends import oracles as o
from tests.backends.test_cpu_properties import SETTINGS, bf16_arrays


@SETTINGS
@given(x=bf16_arrays((4, 8, 2)), w=bf16_arrays((8, 2)))
def test_packet_pairs(x: np.ndarray, w: np.ndarray) -> None:
    xf, wf = o.bf16_bits_to_f32(x), o.bf16_bits_to_f32(w)
    pairs = o.tree_sum(o.fmul(xf, wf[None]))           # (T, A): the two B leaves
    expected = o.fadd(np.float32(0), pairs)            # one time step, added to +0
    out = run(k.packet_pairs, x, w)
    assert out.dtype == np.float32 and out.shape == (4, 8)
    np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))


@SETTINGS
@given(x=bf16_arrays((32,)), w=bf16_arrays((16, 32)))
def test_trf_time_broadcast(x: np.ndarray, w: np.ndarray) -> None:
    xf, wf = o.bf16_bits_to_f32(x), o.bf16_bits_to_f32(w)
    leaves = o.fmul(xf[None, :], wf).reshape(16, 2, 16)  # (R, K / 16, K % 16)
    expected = o.time_sum(o.tree_sum(leaves))
    out = run(k.trf_broadcast, x, w)
    assert out.dtype == np.float32 and out.shape == (16,)
    np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))
