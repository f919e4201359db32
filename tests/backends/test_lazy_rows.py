"""Moves left uncopied (`backends.cpu.lazy_rows`) change no bit: every example and a run
of the differential generator's kernels give the same result bits with the default cpu
options (lazy moves, contraction operands read in place) as with the reference options
(every move an index gather, the dense contraction), and a `LazyRows` copied out is the
eager strided move."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, seed, settings
from hypothesis import strategies as st

import npu_opt
from backends.cpu import CpuBackend, CpuOptions, layout, lazy_rows, moves
from tests.differential.harness import compare, load_kernel
from tests.differential.strategies import kernels, make_inputs
from tests.kernel_files import example, example_names

REFERENCE = CpuOptions(fast_moves=False, fast_contract=False)


def _both(kernel, arrays):
    return CpuBackend().run(kernel, arrays), CpuBackend(REFERENCE).run(kernel, arrays)


@pytest.mark.parametrize("name", example_names())
def test_examples_are_bit_identical_to_the_reference(name):
    kernel = example(name)
    fast, ref = _both(kernel, make_inputs(kernel, 3))
    assert compare(fast, ref) is None


def test_generated_kernels_are_bit_identical_to_the_reference():
    ran = []

    @seed(20261201)
    @settings(max_examples=25, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(g=kernels(), input_seed=st.integers(0, 2**32 - 1))
    def prop(g, input_seed):
        kernel = load_kernel(g.source)
        assume(npu_opt.check(kernel).ok)
        fast, ref = _both(kernel, make_inputs(kernel, input_seed))
        assert compare(fast, ref) is None, g.source
        ran.append(g.source)

    prop()
    assert len(ran) >= 10


def test_the_gemm_fetch_stays_lazy_and_copies_out_as_the_eager_move():
    kernel = example("gemm_i8_kernel")
    traced = kernel.trace("rngd").kernel
    fetch = [op for op in traced.ops if type(op).__name__ == "Fetch"][-1]
    src_t, dst_t = fetch.input.type, fetch.result.type
    rng = np.random.default_rng(1)
    buf = np.zeros(layout.shape_of(src_t), np.int8)
    rows = layout.rows_view(buf, src_t)
    rows[...] = rng.integers(-128, 128, rows.shape, dtype=np.int8)
    lazy = moves.move_local(buf, src_t, dst_t, lazy=True)
    assert isinstance(lazy, lazy_rows.LazyRows)
    eager = moves.move_local(buf, src_t, dst_t)
    gathered = moves.move_local(buf, src_t, dst_t, fast=False)
    assert np.array_equal(lazy_rows.materialize(lazy), eager)
    assert np.array_equal(eager, gathered)
