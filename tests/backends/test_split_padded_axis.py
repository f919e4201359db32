"""A DM tensor whose padded axis is split over two levels with other levels between the
two parts (`(M # 512 % 512 / 128, N ..., 1 # 8); (N ..., M # 512 % 128)`): the joint
mapping's factor form would need a table of 2**21 cells (the structural factoring
tabulates the whole subtree holding both parts of `M # 512`), past the mapping limit.
The cpu backend keys such a move on the levels' own fragments (backends/cpu/keys.py
`joint_frag`) and runs the kernel the compiler accepts (drawn_s6_1 of the benchmarks,
with a shallower k), equal to the VISA interpreter and to numpy."""

from __future__ import annotations

import numpy as np
import pytest

from backends import get_backend
from backends.cpu import CpuBackend, CpuOptions, keys
from benchmarks.drawn_kernels import Drawn
from ir.errors import MappingError
from ir.mapping import m
from ir.mapping import ops as mops
from ir.mapping.nodes import pair_all
from npu_opt import axes
from synth import contraction


def test_the_split_axis_kernel_runs_on_cpu_equal_to_visa_and_numpy():
    spec = contraction("out[m,n] = w[n,k] * a[m,k]", dtype="i8:i32", sizes=dict(m=366, n=384, k=32),
                       name="split_padded_axis")
    point = dict(placement="4x8 of 128x64, on 1/8 of the slices", trf="a", packet=32, order="ij", reuse="all")
    d = Drawn("split_padded_axis", spec, point, "gemm")
    arrays = d.inputs(np.random.default_rng(3))
    w, a = (x.astype(np.int64) for x in arrays[:2])
    want = np.zeros(arrays[-1].shape, np.int64)
    want[:366, :384] = np.einsum("nk,mk->mn", w[:384], a[:366])  # out[m,n] = w[n,k] * a[m,k], exact in int64
    got = [x.copy() for x in arrays]
    CpuBackend(CpuOptions(threads=1)).run(d.kernel, tuple(got))
    np.testing.assert_array_equal(got[-1], want.astype(np.int32))
    interp = [x.copy() for x in arrays]
    get_backend("visa").run(d.kernel, tuple(interp))
    np.testing.assert_array_equal(interp[-1], got[-1])


def test_the_joint_fragments_fall_back_to_the_levels_own_only_past_the_limit():
    axes(M=300, N=384)
    levels = (m("M # 512 % 512 / 128, N # 512 % 512 / 64, 1 # 8"), m("N # 512 % 64, M # 512 % 128"))
    with pytest.raises(MappingError):
        pair_all(list(levels)).factors()
    assert keys.joint_frag(levels) == frozenset({mops.DigitRange("M", 1, 384), mops.DigitRange("N", 1, 384)})
    small = (m("M # 512 / 128"), m("M # 512 % 128"))  # factored jointly: its fragments as they were
    assert keys.joint_frag(small) == mops.frag(pair_all(list(small)))
