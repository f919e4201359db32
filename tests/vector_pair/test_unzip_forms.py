"""`vector_intra_slice_unzip` as the reference has it since v0.7/v0.8:

- the two-argument form `vector_intra_slice_unzip(m("I"), split_time)` infers the group-tiled
  time (v0.8); it compiles to the same artifact as the three-argument form, which still works;
- one group (everything inside the grouping axis, padding included) must fit the register-file
  cache it waits in, 256 32-bit lanes (v0.7): a larger one is PAIR-UNZIP-4 at the unzip's line,
  with the lanes it asked for."""

from __future__ import annotations

import runpy

import numpy as np
import pytest

import npu_opt
from npu_opt import axes, i32, m
from tests.agree import both_backends
from tests.vector_pair.kernels import pair_kernel
from tests.vector_pair.test_pair_refusals import ADD

axes(I=2, A=4, E=32)  # the axes of tests.vector_pair.kernels

_GROUPED = '''
from npu_opt import *
axes(I=2, A={a}, E=64)
Chip, Cluster, Slice = m("1"), m("1 # 2"), m("1 # 256")

@device(chip=1)
def grouped(ctx: Context, x: HbmTensor[i32, Chip, m("I, A, E")]) -> HbmTensor[i32, Chip, m("A, E")]:
    x = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, Slice, m("I, A, E")])
    y = (ctx.main.begin(x.view()).fetch(m("{time}"), m("E % 8")).collect(m("{time}"), m("E % 8"))
         .vector_init()
         .vector_intra_slice_unzip(m("I"), m("A, E / 8"))
         .vector_fxp_zip(FxpBinaryOp.SUB_FXP)
         .vector_final().commit_trim(m("E % 8")).commit())
    return y.to_hbm(ctx.tdma)
'''


def _grouped(tmp_path, a, time):
    path = tmp_path / f"grouped_{a}.py"
    path.write_text(_GROUPED.format(a=a, time=time))
    return runpy.run_path(str(path))["grouped"]


def _x(a):
    return np.random.default_rng(a).integers(-10**6, 10**6, (2, a, 64), dtype=np.int32)


def test_the_two_argument_form_is_the_three_argument_form():
    two = npu_opt.compile(pair_kernel(i32, [ADD], unzip=(m("I"), m("A, E / 8")))).text
    three = npu_opt.compile(pair_kernel(i32, [ADD])).text  # tile time m("A, E / 8, 1 # 2") spelled out
    assert two == three


def test_the_two_argument_form_runs():
    x = np.random.default_rng(1).integers(-10**6, 10**6, (2, 4, 32), dtype=np.int32)
    cpu, text = both_backends(pair_kernel(i32, [ADD], unzip=(m("I"), m("A, E / 8"))), x, " vector_pair ")
    np.testing.assert_array_equal(cpu, x[0] + x[1])


@pytest.mark.parametrize("unzip", [(m("I"), m("A, E / 8"), m("A, E / 8, 1 # 2"), m("A, E / 8")),
                                   (m("I"),)])
def test_other_argument_counts_are_refused(unzip):
    (d, *_) = npu_opt.check(pair_kernel(i32, [ADD], unzip=unzip)).diagnostics
    assert d.code == "TYPE-6", d.render()
    assert d.file.endswith("kernels.py")


@pytest.mark.parametrize("a", [2, 4])
def test_a_group_that_fits_the_cache_runs(tmp_path, a):
    """I outermost in time: one group is A * E lanes, 128 and then exactly the 256 the cache holds."""
    x = _x(a)
    cpu, _ = both_backends(_grouped(tmp_path, a, "I, A, E / 8"), x)
    np.testing.assert_array_equal(cpu, x[0] - x[1])


def test_a_group_larger_than_the_cache_is_refused_with_its_volume(tmp_path):
    (d, *_) = npu_opt.check(_grouped(tmp_path, 8, "I, A, E / 8")).diagnostics
    assert d.code == "PAIR-UNZIP-4", d.render()
    assert d.line == next(i for i, t in enumerate(_GROUPED.splitlines(), 1) if "unzip" in t)
    assert "512 32-bit lanes" in d.message and "256" in d.message
    assert "further inside" in d.render()


@pytest.mark.parametrize("time", ["A, I, E / 8",    # 8 flits of 8 lanes inside I
                                  "A, E / 8, I"])   # one flit
def test_reading_the_axis_further_inside_fits(tmp_path, time):
    """What PAIR-UNZIP-4 says to do, on the refused shape (A = 8)."""
    x = _x(8)
    cpu, _ = both_backends(_grouped(tmp_path, 8, time), x)
    np.testing.assert_array_equal(cpu, x[0] - x[1])
