"""HBM element layouts of parameters and results beyond whole axes: padding, split and
reordered digits, broadcasts; and a returned bare `to_hbm` taking the annotation's layout."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.params.data import BACKENDS
from ir.host_layout import broadcast_dims, host_shape
from ir.mapping import axes as declare
from ir.errors import NpuOptError
from tests.params import kernels as k

RNG = np.random.default_rng(12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_padded_parameter_reordered_result(backend):
    x = RNG.integers(-2**31, 2**31, (64, 6)).astype(np.int32)  # `A, R # 8`: (|A|, |R|)
    np.testing.assert_array_equal(npu_opt.run(k.padded, x, backend=backend), x.T)


@pytest.mark.parametrize("backend", BACKENDS)
def test_split_digits_parameter_padded_result(backend):
    x = RNG.integers(-128, 128, (4, 8, 16)).astype(np.int8)  # `A / 16, B, A % 16`
    want = x.transpose(0, 2, 1).reshape(64, 8)               # [a / 16, a % 16, b] -> [a, b]
    np.testing.assert_array_equal(npu_opt.run(k.split, x, backend=backend), want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_returned_bare_to_hbm_takes_the_annotated_layouts(backend):
    x = RNG.integers(-128, 128, (64, 8)).astype(np.int8)
    t, s = npu_opt.run(k.adopted, x, backend=backend)
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(s, x.reshape(8, 8, 8).transpose(1, 2, 0))  # [a % 8, b, a / 8]


def test_host_shapes_follow_the_live_positions_of_each_term():
    ax = declare(A=64, B=8, R=6)
    from ir.mapping import m

    assert host_shape(m("A, R # 8", axes=ax)) == (64, 6)
    assert host_shape(m("A / 16, B, A % 16", axes=ax)) == (4, 8, 16)
    assert host_shape(m("B, 4, A", axes=ax)) == (8, 4, 64)  # a broadcast keeps every copy
    assert broadcast_dims(m("B, 4, A", axes=ax)) == (1,)
    assert host_shape(m("1 # 8, A", axes=ax)) == (1, 64)     # pure padding: its one live cell


def test_adopted_layout_shows_in_the_artifact():
    text = npu_opt.compile(k.adopted).text
    assert 'result %2 : hbm[i8, "1", "B, A"]' in text and 'result %3 : hbm[i8, "1", "A % 8, B, A / 8"]' in text


def test_padded_parameter_of_the_wrong_host_shape_is_usage():
    with pytest.raises(NpuOptError, match=r"needs shape \(64, 6\)") as info:
        npu_opt.run(k.padded, np.zeros((64, 8), np.int32))
    assert info.value.code == "USAGE"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_padded_tail_moves_into_dm_with_its_padding(backend):
    """Rows of 5 live cells padded to 8 on both sides: the live run (20 or 5 bytes) is not
    8-byte aligned, so the DMA into DM moves whole padded rows."""
    x32 = RNG.integers(-2**31, 2**31, (64, 5)).astype(np.int32)
    np.testing.assert_array_equal(npu_opt.run(k.padded_tail, x32, backend=backend), x32)
    x8 = RNG.integers(-128, 128, (64, 5)).astype(np.int8)
    np.testing.assert_array_equal(npu_opt.run(k.padded_tail_i8, x8, backend=backend), x8.T)


def test_the_padded_tail_dma_writes_aligned_packets():
    text = npu_opt.compile(k.padded_tail_i8).text
    (line,) = [ln for ln in text.splitlines() if "kind=HBM_TO_DM" in ln]
    assert "packet_bytes=32" in line  # 4 padded rows of 8 bytes, not 5-byte runs


def test_a_dense_source_into_a_padded_tail_is_dma_5():
    from tests.params import kernels_refused as r

    (d,) = npu_opt.check(r.dense_into_padded_tail).diagnostics
    assert d.code == "DMA-5" and "5 live cell(s) = 5 byte(s)" in d.message
    assert d.line == r.DENSE_LINE
