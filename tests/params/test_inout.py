"""In-out parameters and results on both executing backends, against numpy oracles.

`run` writes every `Mut` array in place (numpy `out=`), returns the results followed by
the in-out arrays themselves, and the visa interpreter agrees bit for bit with cpu."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.params.data import BACKENDS, i8_array
from tests.params import kernels as k

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unit_kernel_writes_its_output_in_place(backend):
    x, out = i8_array(RNG, 64, 8), np.zeros((64, 8), np.int8)
    got = npu_opt.run(k.copy_into, x, out, backend=backend)
    assert got is out  # one value: the in-out array itself
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_result_then_in_place_write(backend):
    x, out = i8_array(RNG, 64, 8), i8_array(RNG, 8, 64)
    before = out.copy()
    result, written = npu_opt.run(k.swap_into, x, out, backend=backend)
    assert written is out
    np.testing.assert_array_equal(result, before.T)  # read before the write
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unwritten_in_out_parameter_keeps_its_contents(backend):
    x, out = i8_array(RNG, 64, 8), i8_array(RNG, 64, 8)
    before = out.copy()
    result, written = npu_opt.run(k.untouched, x, out, backend=backend)
    np.testing.assert_array_equal(result, x)
    assert written is out
    np.testing.assert_array_equal(out, before)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_read_sees_the_write_before_it_and_the_last_write_wins(backend):
    x, y, out = i8_array(RNG, 64, 8), i8_array(RNG, 64, 8), np.zeros((64, 8), np.int8)
    result, _ = npu_opt.run(k.twice, x, y, out, backend=backend)
    np.testing.assert_array_equal(result, x)
    np.testing.assert_array_equal(out, y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_contraction_lands_in_a_padded_in_out_buffer(backend):
    x, w = i8_array(RNG, 8, 64), i8_array(RNG, 8, 64)
    out = np.full((8, 8), 7, np.int32)  # host shape of `I, N # 16` is (|I|, |N|): padding is not an array cell
    copy, written = npu_opt.run(k.matmul_into, x, w, out, backend=backend)
    np.testing.assert_array_equal(out, (x.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32))
    np.testing.assert_array_equal(copy, w)
    assert written is out


def test_in_out_bf16_accepts_the_bit_pattern_array():
    """An in-out bf16 parameter takes an ml_dtypes array or its uint16 bit patterns."""
    from tests.params import kernels_struct as ks

    x = RNG.integers(0, 0x7F00, (64, 8)).astype(np.uint16)
    for out in (np.zeros((64, 8), np.uint16), np.zeros((64, 8), ks.BF16_HOST)):
        npu_opt.run(ks.bf16_into, x, out)
        np.testing.assert_array_equal(out.view(np.uint16), x)


def test_cpu_and_visa_agree_on_every_in_out_array():
    x, y = i8_array(RNG, 64, 8), i8_array(RNG, 64, 8)
    outs = {b: np.zeros((64, 8), np.int8) for b in BACKENDS}
    results = {b: npu_opt.run(k.twice, x, y, outs[b], backend=b) for b in BACKENDS}
    assert np.array_equal(results["cpu"][0], results["visa"][0])
    assert outs["cpu"].tobytes() == outs["visa"].tobytes()
