"""The order of a saturating reduction (docs/numerics.md): `ADD_SAT` is not associative, so
an integer result depends on the fold. npu-opt (both backends) folds as the chip does, a
tree per flit then the flits in stream order; furiosa-opt's CPU backend folds every value
in one serial pass. `npu_opt.testing.oracles` offers both, checked here against hand-worked sums and
against a kernel."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403
from npu_opt.testing.oracles import add_sat_chip_fold, add_sat_serial_fold

axes(A=8, R=16)  # noqa: F405
Chip, Cluster = m("1"), m("1 # 2")  # noqa: F405
MAX, MIN = 2**31 - 1, -(2**31)


def test_the_two_orders_by_hand():
    # chip: (MAX + 1) saturates to MAX, (1 + -1) is 0, MAX + 0 = MAX, then 0 + MAX = MAX
    assert add_sat_chip_fold([MAX, 1, 1, -1]) == MAX
    # serial: 0 + MAX = MAX, + 1 stays MAX, + 1 stays MAX, + -1 = MAX - 1
    assert add_sat_serial_fold([MAX, 1, 1, -1]) == MAX - 1
    # across flits: flit sums MIN (saturated) and 5; the accumulator gives MIN + 5
    assert add_sat_chip_fold([MIN, -1, 0, 0, 2, 3, 0, 0]) == MIN + 5
    assert add_sat_serial_fold([MIN, -1, 0, 0, 2, 3, 0, 0]) == MIN + 5
    # with nothing saturating the orders agree with the plain sum
    assert add_sat_chip_fold([5, -7, 11, 2, 3, 3, 3, 3]) == add_sat_serial_fold([5, -7, 11, 2, 3, 3, 3, 3]) == 23


def test_a_chip_fold_needs_whole_flits():
    with pytest.raises(ValueError):
        add_sat_chip_fold([1, 2, 3])


@device(chip=1)  # noqa: F405
def sat_sum(ctx: Context, x: HbmTensor[i32, Chip, m("A, R")]) -> HbmTensor[i32, Chip, m("A")]:  # noqa: F405
    """y[a] = ADD_SAT over r of x[a, r]; R is time R / 4 and packet R % 4 (four flits of 4)."""
    xd = x.to_dm(ctx.tdma, DmTensor[i32, Chip, Cluster, m("A / 2 # 64"), m("A % 2, R")])  # noqa: F405
    y = (ctx.main.begin(xd.view()).fetch(m("A % 2, R / 8"), m("R % 8"))  # noqa: F405
         .collect(m("A % 2, R / 8"), m("R % 8")).vector_init().vector_intra_slice_tag(TagMode.ZERO)  # noqa: F405
         .vector_narrow_split(m("A % 2, R / 4"), m("R % 4"))  # noqa: F405
         .vector_intra_slice_reduce(m("R"), m("A % 2"), m("1 # 4"), IntraSliceReduceOpI32.ADD_SAT)  # noqa: F405
         .vector_widen_pad(m("1 # 8")).vector_final().commit_trim(m("1 # 8")).commit(m("A % 2, 1 # 8")))  # noqa: F405
    return y.to_hbm(ctx.tdma)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_a_kernel_folds_in_the_chip_order(backend):
    x = np.random.default_rng(28).integers(-1000, 1000, (8, 16)).astype(np.int32)
    x[0] = [MAX, 1, 1, -1] + [0] * 12                 # saturates inside the first flit
    x[1] = [MAX, 0, 0, 0, 1, 0, 0, 0, -1] + [0] * 7   # saturates across flits: both orders MAX - 1
    got = npu_opt.run(sat_sum, x, backend=backend)
    assert got[0] == MAX and got[1] == MAX - 1          # the hand-worked values
    np.testing.assert_array_equal(got, add_sat_chip_fold(x))
    serial = add_sat_serial_fold(x)
    assert serial[0] == MAX - 1 and np.array_equal(got[1:], serial[1:])
