"""Runtime scalars and guards (docs/runtime.md): scalar arithmetic against numpy's
fixed-width integers, guards against numpy slicing, on cpu and visa bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from ir.errors import NpuOptError
from tests.runtime.kernels import arithmetic, nested

CASES = [(-7, 0, 7, True), (2**31 - 1, 5, 2**32, False), (40, 2**32 - 1, 2**64 - 1, True), (33, 9, 0, False)]


def both(kernel, *args):
    cpu = npu_opt.run(kernel, *args)
    visa = npu_opt.run(kernel, *args, backend="visa")
    assert cpu.dtype == visa.dtype and np.array_equal(cpu, visa)
    return cpu


def flags_oracle(a: int, b: int, c: int, f: bool) -> list[bool]:
    """The eight conditions of `arithmetic`, in numpy's fixed-width integers."""
    with np.errstate(over="ignore"):
        a32, b32, c64 = np.int32(a), np.uint32(b), np.uint64(c)
        return [bool(a32 * np.int32(3) + np.int32(5) > np.int32(100)),
                bool(a32.astype(np.uint32) > np.uint32(1000)),
                bool(np.uint64(b32) + np.uint64(1) > np.uint64(4294967295)),
                bool(c64 > np.uint64(4294967295)),
                bool(np.int64(a32) < np.int64(-5)),
                bool(f and b32 != 0),
                not f,
                bool(b32 - np.uint32(10) < b32)]


@pytest.mark.parametrize("a, b, c, f", CASES)
def test_scalar_arithmetic_wraps_like_fixed_width_integers(a, b, c, f):
    out = both(arithmetic, a, b, c, f)
    got = [bool(out[0, k, 0]) for k in range(8)]
    assert got == flags_oracle(a, b, c, f)
    assert np.array_equal(out, np.broadcast_to(out[:1, :, :1], out.shape))   # whole flags


@pytest.mark.parametrize("lo, hi", [(0, 8), (3, 5), (5, 3), (-2, 100), (8, 8)])
def test_nested_guards_skip_the_work_of_false_blocks(lo, hi):
    x = np.random.default_rng(lo * 31 + hi).integers(-2**31, 2**31, (64, 8, 8)).astype(np.int32)
    want = np.zeros_like(x)
    keep = [k for k in range(8) if lo <= k < hi]
    want[:, keep] = x[:, keep]
    assert np.array_equal(both(nested, x, lo, hi), want)


def test_the_trace_is_one_kernel_for_every_launch_value():
    text = nested.trace().kernel.text()
    assert text.count(" when ") == 16 and text.count("end_when") == 16
    assert "param name='lo' index=1 : scalar<i64>" in text


@pytest.mark.parametrize("value, message", [(2**32, "int in"), (-1, "int in"), (1.0, "not 1.0"), ("3", "not '3'"),
                                            (True, "not True")])
def test_a_launch_value_outside_its_type_is_a_usage_error(value, message):
    for backend in ("cpu", "visa"):
        with pytest.raises(NpuOptError, match=message) as e:
            npu_opt.run(arithmetic, 1, value, 0, True, backend=backend)
        assert e.value.code == "USAGE"


def test_numpy_scalars_and_zero_d_arrays_are_launch_values():
    out = both(arithmetic, np.int32(-7), np.uint32(0), np.array(7, np.uint64), np.bool_(True))
    assert [bool(out[0, k, 0]) for k in range(8)] == flags_oracle(-7, 0, 7, True)
