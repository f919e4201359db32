"""`run`'s refusals of bad in-out and grouped arguments: USAGE naming the parameter, raised
before anything runs, with every caller array left as it was."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.errors import NpuOptError
from tests.params import kernels as k
from tests.params import kernels_struct as ks


def _refused(kernel, *args, backend="cpu") -> str:
    snapshot = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(NpuOptError) as info:
        npu_opt.run(kernel, *args, backend=backend)
    assert info.value.code == "USAGE"
    for before, after in zip(snapshot, args):
        if isinstance(after, np.ndarray):
            np.testing.assert_array_equal(before, after)  # untouched
    return str(info.value)


X = np.arange(512, dtype=np.int64).astype(np.int8).reshape(64, 8)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_wrong_shape_dtype_or_kind_of_out_array(backend):
    assert "`out`" in _refused(k.copy_into, X, np.ones((8, 64), np.int8), backend=backend)
    assert "`out` is i8" in _refused(k.copy_into, X, np.ones((64, 8), np.int16), backend=backend)
    assert "`out` must be a numpy array" in _refused(k.copy_into, X, [[0] * 8] * 64, backend=backend)


def test_read_only_out_array():
    out = np.ones((64, 8), np.int8)
    out.setflags(write=False)
    assert "`out` is a read-only array" in _refused(k.copy_into, X, out)


def test_non_contiguous_out_array():
    out = np.ones((8, 64), np.int8).T  # the right shape, Fortran order
    assert "`out` is not C-contiguous" in _refused(k.copy_into, X, out)


def test_a_bad_input_refuses_before_the_out_array_is_written():
    out = np.ones((64, 8), np.int8)
    _refused(k.copy_into, X.astype(np.int16), out)
    assert (out == 1).all()


def test_grouped_arguments_must_follow_the_annotation():
    out = np.zeros((64, 8), np.int8)
    assert "`io` is a tuple of 2" in _refused(ks.tuple_in_out, (X,))
    assert "`io` is a tuple of 2" in _refused(ks.tuple_in_out, X)
    assert "`p` is a Pair" in _refused(ks.struct_in_out, (X, out))
    assert "takes 1 array(s) (p), got 2" in _refused(ks.struct_in_out, X, out)


def test_an_in_out_struct_member_is_checked_by_its_path():
    assert "`p.dst`" in _refused(ks.struct_in_out, ks.Pair(X, np.zeros((64, 8), np.int8)))
