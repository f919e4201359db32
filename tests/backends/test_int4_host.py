"""An `i4` parameter takes an `ml_dtypes.int4` array as well as the `int8` one holding -8..7
(docs/numerics.md), on both backends, and an in-out `int4` array is written in place."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import npu_opt
from npu_opt import *  # noqa: F403 - the kernel DSL
from tests.backends.kernels_convert import widen_i4

axes(A=256)  # noqa: F405
Chip, Cluster, One = m("1"), m("1 # 2"), m("1 # 64")  # noqa: F405

VALUES = (np.arange(256) % 16 - 8).astype(np.int8)[::-1].copy()  # every i4 value, 16 times


@device(chip=1)  # noqa: F405
def copy_i4_into(ctx: Context, x: HbmTensor[i4, Chip, m("A")],  # noqa: F405
                   out: Mut[HbmTensor[i4, Chip, m("A")]]) -> None:  # noqa: F405
    """out = x, through DM: an i4 result written into the caller's array."""
    d = x.to_dm(ctx.tdma, DmTensor[i4, Chip, Cluster, One, m("A")])  # noqa: F405
    d.to_hbm(ctx.tdma, out)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_int4_input_reads_as_its_values(backend):
    as_int4 = VALUES.astype(ml_dtypes.int4)
    got = npu_opt.run(widen_i4, as_int4, backend=backend)
    np.testing.assert_array_equal(got, VALUES.astype(np.int32))
    np.testing.assert_array_equal(got, npu_opt.run(widen_i4, VALUES, backend=backend))


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_int4_in_out_array_is_written_in_place(backend):
    out = np.zeros(256, ml_dtypes.int4)
    returned = npu_opt.run(copy_i4_into, VALUES.astype(ml_dtypes.int4), out, backend=backend)
    assert returned is out and out.dtype == np.dtype(ml_dtypes.int4)
    np.testing.assert_array_equal(out.astype(np.int8), VALUES)


def test_other_dtypes_are_still_refused_by_name():
    with pytest.raises(npu_opt.NpuOptError, match="pass an int8 or int4 array, not int16"):
        npu_opt.run(widen_i4, VALUES.astype(np.int16))
