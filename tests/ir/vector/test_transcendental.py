"""The unary float ops: special values, and the max ulp error over a dense sample, which
must stay within ULP_TOLERANCE (the data npu_opt.testing is to use for these ops)."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import sys

import numpy as np
import pytest

from ir.vector import FpUnaryOp
from ir.vector.numerics import ULP_TOLERANCE
from tests.ir.vector.unit_numerics import apply_unary
from tests.ir.vector.oracles import f32_bits, ordered, ulp_f32


def sigmoid64(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


# math-module references, one float64 element at a time
REFERENCE = {
    "EXP": math.exp, "NEG_EXP": lambda x: math.exp(-x), "SQRT": math.sqrt, "TANH": math.tanh,
    "SIGMOID": sigmoid64, "ERF": math.erf, "LOG": math.log, "SIN": math.sin, "COS": math.cos,
}


def sample(lo: float, hi: float, n: int = 3000) -> np.ndarray:
    """A dense f32 sample of [lo, hi]: a uniform grid, a geometric grid for wide ranges,
    random bit patterns inside the range, and the ends."""
    rng = np.random.default_rng(12)
    parts = [np.linspace(lo, hi, n)]
    if lo > 0:
        parts.append(np.geomspace(lo, hi, n))
    else:
        top = max(abs(lo), abs(hi))
        mags = np.geomspace(1e-30, top, n // 2)
        parts += [mags, -mags]
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):
        parts.append(bits[(bits >= lo) & (bits <= hi)].astype(np.float64))
    parts.append(np.array([lo, hi]))
    x = np.concatenate(parts).astype(np.float32)
    return np.unique(x[(x >= np.float32(lo)) & (x <= np.float32(hi))])


def max_ulp_error(name: str) -> float:
    tol = ULP_TOLERANCE[name]
    x = sample(tol.lo, tol.hi)
    y = apply_unary(getattr(FpUnaryOp, name), x).astype(np.float64).tolist()
    worst = 0.0
    for xi, yi in zip(x.tolist(), y):
        t = REFERENCE[name](xi)
        worst = max(worst, abs(yi - t) / ulp_f32(t))
    return worst


@pytest.mark.parametrize("name", sorted(ULP_TOLERANCE))
def test_error_is_within_the_documented_ulps(name):
    measured = max_ulp_error(name)
    assert measured <= ULP_TOLERANCE[name].ulps, f"{name}: {measured:.3f} ulp"


def test_every_unary_op_has_a_tolerance():
    assert sorted(ULP_TOLERANCE) == sorted(op.name for op in FpUnaryOp)


def bits(values) -> list[int]:
    return [f32_bits(v) for v in np.asarray(values, np.float32).tolist()]


def test_special_values():
    inf, nan = math.inf, math.nan
    x = np.float32([0.0, -0.0, inf, -inf, nan])
    got = {op.name: apply_unary(op, x) for op in FpUnaryOp}
    assert bits(got["EXP"][:4]) == bits([1.0, 1.0, inf, 0.0]) and np.isnan(got["EXP"][4])
    assert bits(got["NEG_EXP"][:4]) == bits([1.0, 1.0, 0.0, inf])
    assert bits(got["SQRT"][:3]) == bits([0.0, -0.0, inf]) and np.isnan(got["SQRT"][3])
    assert bits(got["TANH"][:4]) == bits([0.0, -0.0, 1.0, -1.0])
    assert bits(got["ERF"][:4]) == bits([0.0, -0.0, 1.0, -1.0])
    assert bits(got["SIGMOID"][:4]) == bits([0.5, 0.5, 1.0, 0.0])
    assert bits(got["LOG"][:3]) == bits([-inf, -inf, inf]) and np.isnan(got["LOG"][3])
    assert bits(got["SIN"][:2]) == bits([0.0, -0.0]) and np.isnan(got["SIN"][2:]).all()
    assert bits(got["COS"][:2]) == bits([1.0, 1.0]) and np.isnan(got["COS"][2:]).all()
    assert all(np.isnan(v[4]) for v in got.values())


def test_overflow_underflow_and_subnormals_are_kept():
    assert apply_unary(FpUnaryOp.EXP, np.float32([89.0])) == np.inf
    tiny = apply_unary(FpUnaryOp.EXP, np.float32([-100.0]))[0]  # e^-100 = 3.7e-44: a subnormal
    assert 0 < tiny < 2.0**-126 and abs(float(tiny) - math.exp(-100)) <= 2.0**-150
    assert apply_unary(FpUnaryOp.LOG, np.float32([1e-45]))[0] == np.float32(math.log(2.0**-149))
    assert apply_unary(FpUnaryOp.SIGMOID, np.float32([-89.0])) == 0.0  # e^89 overflows first
    assert apply_unary(FpUnaryOp.SIGMOID, np.float32([17.5])) == 1.0


def test_sigmoid_is_the_three_step_f32_expression():
    x = np.linspace(-20, 20, 801, dtype=np.float32)
    e = apply_unary(FpUnaryOp.NEG_EXP, x)
    want = np.float32(1.0) / (np.float32(1.0) + e)
    assert bits(apply_unary(FpUnaryOp.SIGMOID, x)) == bits(want)


def _libm():
    name = ctypes.util.find_library("m") if sys.platform.startswith("linux") else None
    if name is None:
        pytest.skip("the comparison with the host's single-precision libm needs Linux glibc")
    lib = ctypes.CDLL(name)
    for fn in ("expf", "sqrtf", "tanhf", "erff", "logf", "sinf", "cosf"):
        getattr(lib, fn).restype = ctypes.c_float
        getattr(lib, fn).argtypes = [ctypes.c_float]
    return lib


# glibc 2.36's tanhf is off by up to 1.5 ulp itself; the others are within 0.6 ulp
LIBM_ULPS = {"TANH": 2}


def test_differs_from_the_hosts_f32_libm_by_at_most_one_ulp():
    """The reference computes these with the host's f32 libm; on glibc we agree to 1 ulp
    (2 for tanh)."""
    lib = _libm()
    f = {"EXP": lib.expf, "NEG_EXP": lambda v: lib.expf(-v), "SQRT": lib.sqrtf, "TANH": lib.tanhf,
         "ERF": lib.erff, "LOG": lib.logf, "SIN": lib.sinf, "COS": lib.cosf}
    for name, fn in f.items():
        tol = ULP_TOLERANCE[name]
        x = sample(tol.lo, tol.hi, 600)
        ours = bits(apply_unary(getattr(FpUnaryOp, name), x))
        theirs = bits([fn(v) for v in x.tolist()])
        worst = max(abs(ordered(a) - ordered(b)) for a, b in zip(ours, theirs))
        assert worst <= LIBM_ULPS.get(name, 1), f"{name}: {worst} ulp from the host's libm"
