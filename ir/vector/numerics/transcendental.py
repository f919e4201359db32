"""Float cluster unary ops on f32: exp, neg_exp, sqrt, tanh, sigmoid, erf, log, sin, cos.

What the reference's host model computes: each op is the Rust `f32` method (`x.exp()`,
`(-x).exp()`, `x.sqrt()`, `x.tanh()`, `x.ln()`, `x.sin()`, `x.cos()`), i.e. the host's
single-precision libm, and sigmoid is the f32 expression `1.0 / (1.0 + (-x).exp())`
(three roundings). Erf is left unimplemented there.

What npu-opt computes (design): the function evaluated in float64 and rounded once to
f32, which is the correctly rounded result except in rare near-tie cases, and which does
not depend on the host's libm; sigmoid keeps the reference's three-step f32 expression on
top of that exp. Erf is the float64 erf rounded to f32. Against glibc 2.36's single-precision
functions (what the reference computes on Linux) the results differ by at most 1 ulp, and
by 2 for tanh (glibc's `tanhf` is the less accurate of the two); most results are equal.

`ULP_TOLERANCE` states, per op, how far the result may be from the exact value (measured
against float64 / math-module references) over the input range where the result is a
normal f32: the bound `npu_opt.testing.assert_close` is to use for these ops.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ir.vector.numerics._arrays import as_f32, canonical_nan

__all__ = ["exp", "neg_exp", "sqrt", "tanh", "sigmoid", "erf", "log", "sin", "cos",
           "FP_UNARY_OPS", "UlpTolerance", "ULP_TOLERANCE"]


def _via_f64(fn: Any, x: Any) -> np.ndarray:
    with np.errstate(all="ignore"):
        return canonical_nan(fn(as_f32(x).astype(np.float64)).astype(np.float32))


def exp(x: Any) -> np.ndarray:
    """`Exp`: e^x. Overflows to +inf above about 88.72; results below 2^-126 are
    subnormal f32 (not flushed); exp(-inf) = 0, exp(NaN) = NaN."""
    return _via_f64(np.exp, x)


def neg_exp(x: Any) -> np.ndarray:
    """`NegExp`: e^(-x) (the negation is exact, so this is exp(-x))."""
    return exp(np.negative(as_f32(x)))


def sqrt(x: Any) -> np.ndarray:
    """`Sqrt`: the IEEE square root (correctly rounded); sqrt(-0.0) = -0.0, sqrt of a
    negative number is NaN."""
    with np.errstate(all="ignore"):
        return canonical_nan(np.sqrt(as_f32(x), dtype=np.float32))


def tanh(x: Any) -> np.ndarray:
    """`Tanh`: the hyperbolic tangent; odd (tanh(-0.0) = -0.0), +-1 at +-inf."""
    return _via_f64(np.tanh, x)


def sigmoid(x: Any) -> np.ndarray:
    """`Sigmoid`: 1 / (1 + e^(-x)) evaluated in f32 as three rounded steps: e = exp(-x),
    d = 1 + e, result 1 / d. So sigmoid(x) is exactly 0 once e^(-x) overflows (x below
    about -88.72) and exactly 1 once e^(-x) < 2^-25 (x above about 17.33)."""
    e = neg_exp(x)
    one = np.float32(1.0)
    with np.errstate(all="ignore"):
        return canonical_nan(np.divide(one, np.add(one, e, dtype=np.float32), dtype=np.float32))


_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x: Any) -> np.ndarray:
    """`Erf`: the error function (odd; +-1 at +-inf); NaN gives NaN."""
    x64 = as_f32(x).astype(np.float64)
    return canonical_nan(np.asarray(_ERF(x64), dtype=np.float64).astype(np.float32))


def log(x: Any) -> np.ndarray:
    """`Log`: the natural logarithm; log(+-0) = -inf, log of a negative number is NaN,
    log(+inf) = +inf; subnormal inputs have finite logarithms."""
    return _via_f64(np.log, x)


def sin(x: Any) -> np.ndarray:
    """`Sin`: sine of x radians (argument reduced exactly, so large inputs are accurate);
    NaN at +-inf."""
    return _via_f64(np.sin, x)


def cos(x: Any) -> np.ndarray:
    """`Cos`: cosine of x radians; NaN at +-inf."""
    return _via_f64(np.cos, x)


FP_UNARY_OPS = {"EXP": exp, "NEG_EXP": neg_exp, "SQRT": sqrt, "TANH": tanh, "SIGMOID": sigmoid,
                "ERF": erf, "LOG": log, "SIN": sin, "COS": cos}


@attrs.frozen
class UlpTolerance:
    """Max error of an op in f32 ulps of the exact result, for inputs in [lo, hi]."""

    ulps: float
    lo: float
    hi: float


# Measured maxima over about 7,500 points per op (the transcendental tests re-measure them):
# 0.50 ulp for every once-rounded op, 1.67 ulp for sigmoid's three roundings. The bounds
# leave room for a near-tie or a 1-ulp float64 error in another host's math library.
ULP_TOLERANCE: dict[str, UlpTolerance] = {
    "EXP": UlpTolerance(1.0, -87.0, 88.5),
    "NEG_EXP": UlpTolerance(1.0, -88.5, 87.0),
    "SQRT": UlpTolerance(0.5, 0.0, 3.4e38),
    "TANH": UlpTolerance(1.0, -20.0, 20.0),
    "SIGMOID": UlpTolerance(2.0, -87.0, 88.5),
    "ERF": UlpTolerance(1.0, -10.0, 10.0),
    "LOG": UlpTolerance(1.0, 1.2e-38, 3.4e38),
    "SIN": UlpTolerance(1.0, -1.0e4, 1.0e4),
    "COS": UlpTolerance(1.0, -1.0e4, 1.0e4),
}
