"""Testing kernels: comparing their outputs with oracles (the tolerance rule of docs/testing.md),
and the reference numpy oracles themselves (`npu_opt.testing.oracles`).

Two public checks, both raising `AssertionError` with a numpy.testing-style message
(how many elements fail, then the worst ones with index, values and bit patterns):

- `assert_close(actual, expected, dtype=None, *, operands=None, n=None)`: integer
  outputs must be equal; float outputs must be bit-identical to `expected` (an
  `*_oracle_exact` result). With `operands=(a64, b64)` the tolerance check of exact
  math runs too; `expected=None` runs only that check.
  With `exact=e64, ulps=u` (an f32 output of a transcendental Vector Engine op) every
  element must lie within `u` ulps of the exact float64 values `e64`; `u` is a number
  or an `FpUnaryOp` (or its name), meaning that op's `ULP_TOLERANCE` bound (`assert_within_ulps` below).
- `assert_within_tolerance(actual, a64, b64, n=None, dtype=None)`: every output `y`
  satisfies `|y - e| <= 2^-7 |e| + n 2^-22 S + n 2^-126`, with `e = sum(a*b)` and
  `S = sum|a*b|` over the last axis of the float64 operands and `n` the contracted length.

Float arrays may be given as `ml_dtypes` / float32 values or as unsigned bit patterns
(`uint16` for bf16, `uint8` for f8/f4, `uint32` for f32). `dtype` (a `DType` or its name)
says which; when omitted it is inferred, a self-describing array winning over raw bits.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ir.dtypes import DType
from ir.vector.numerics.transcendental import ULP_TOLERANCE
from npu_opt.testing.oracles import bf16_bits_to_f32, tolerance_bound

__all__ = ["assert_close", "assert_within_tolerance", "to_bits", "decode"]

_SHOWN = 5  # worst elements listed in a failure message

# numpy dtypes that name their DType unambiguously.
_BY_DTYPE: dict[np.dtype, DType] = {
    np.dtype(np.int8): DType.I8, np.dtype(np.int16): DType.I16, np.dtype(np.int32): DType.I32,
    np.dtype(np.float32): DType.F32, np.dtype(ml_dtypes.bfloat16): DType.BF16,
    np.dtype(ml_dtypes.float8_e4m3fn): DType.F8E4M3, np.dtype(ml_dtypes.float8_e5m2): DType.F8E5M2,
    np.dtype(ml_dtypes.float4_e2m1fn): DType.F4E2M1,
}
# raw unsigned containers, when nothing better is known.
_BY_BITS: dict[np.dtype, DType] = {
    np.dtype(np.uint8): DType.U8, np.dtype(np.uint16): DType.BF16, np.dtype(np.uint32): DType.F32,
}


def _infer(dtype: DType | str | None, *arrays: np.ndarray) -> DType:
    if dtype is not None:
        return DType.parse(dtype)
    for table in (_BY_DTYPE, _BY_BITS):
        for array in arrays:
            if array is not None and array.dtype in table:
                return table[array.dtype]
    names = ", ".join(str(a.dtype) for a in arrays if a is not None)
    raise TypeError(f"cannot tell the npu-opt dtype of arrays of {names}; pass dtype=")


def to_bits(array, dtype: DType | str) -> np.ndarray:
    """The unsigned bit patterns of a float array (values or bits already), or the values of
    an integer array as int64. Raises TypeError for a container that does not fit `dtype`."""
    dtype = DType.parse(dtype)
    array = np.asarray(array)
    if dtype.is_int:
        if array.dtype.kind not in "iu":
            raise TypeError(f"expected an integer array for {dtype}, got {array.dtype}")
        return array.astype(np.int64)
    if array.dtype == dtype.bits_dtype:
        return array
    if array.dtype == dtype.host_dtype:
        return array.view(dtype.bits_dtype)
    raise TypeError(f"expected {dtype} as {dtype.host_dtype} values or {dtype.bits_dtype} bit patterns, "
                    f"got {array.dtype}")


def decode(bits: np.ndarray, dtype: DType | str) -> np.ndarray:
    """float64 values of `to_bits` output, decoded as IEEE-like `ml_dtypes` (no flushing)."""
    dtype = DType.parse(dtype)
    if dtype.is_int:
        return bits.astype(np.float64)
    return bits.view(dtype.host_dtype).astype(np.float64)


def _hex(bits: int, dtype: DType) -> str:
    if dtype.is_int:
        return ""
    width = max(1, dtype.bits // 4)
    return f" (0x{int(bits):0{width}x})"


def _value(bits, value: float, dtype: DType) -> str:
    if dtype.is_int:
        return str(int(bits))
    return f"{float(value)!r}{_hex(bits, dtype)}"


def _index(flat: int, shape: tuple[int, ...]) -> str:
    return str(tuple(int(i) for i in np.unravel_index(flat, shape))) if shape else "()"


def _actual_bits(actual: np.ndarray, expected_shape: tuple[int, ...], dtype: DType, what: str) -> np.ndarray:
    """`to_bits(actual)` after checking its shape and container; failures are assertion errors."""
    if actual.shape != tuple(expected_shape):
        raise AssertionError(f"{what}\nshape mismatch: actual {actual.shape}, expected {tuple(expected_shape)}")
    if dtype.is_int and actual.dtype != dtype.host_dtype:
        raise AssertionError(f"{what}\ndtype mismatch: actual is {actual.dtype}, the host form of {dtype} "
                             f"is {dtype.host_dtype}")
    try:
        return to_bits(actual, dtype)
    except TypeError as e:
        raise AssertionError(f"{what}\ndtype mismatch: {e}") from None


def assert_close(actual, expected, dtype: DType | str | None = None, *,
                 operands: tuple | None = None, n: int | None = None, err_msg: str = "",
                 exact=None, ulps=None) -> None:
    """Check a kernel output under docs/testing.md.

    Integer dtypes: exact equality. Float dtypes: bit-exact equality with `expected`
    (skipped when `expected` is None), then, when `operands=(a64, b64)` is given, the
    tolerance check against exact math (see `assert_within_tolerance`; `n` defaults to
    the operands' last-axis length). With `exact=e64, ulps=u` instead (pass `expected=None`):
    an f32 output within `u` ulps of the float64 values `e64`, `u` a number or an `FpUnaryOp`
    whose `ULP_TOLERANCE` bound applies (`assert_within_ulps`)."""
    if exact is not None or ulps is not None:  # the transcendental check (assert_within_ulps)
        if exact is None or ulps is None or expected is not None or operands is not None:
            raise ValueError("assert_close with `exact=` takes `ulps=` and neither `expected` nor `operands`")
        assert_within_ulps(actual, exact, ulps, err_msg)
        return
    actual = np.asarray(actual)
    expected = None if expected is None else np.asarray(expected)
    dtype = _infer(dtype, actual, expected)
    if expected is None and operands is None:
        raise ValueError("assert_close needs `expected`, `operands`, or both")
    if expected is not None:
        _assert_exact(actual, expected, dtype, err_msg)
    if operands is not None:
        a64, b64 = operands
        assert_within_tolerance(actual, a64, b64, n, dtype=dtype, err_msg=err_msg)


def _assert_exact(actual: np.ndarray, expected: np.ndarray, dtype: DType, err_msg: str) -> None:
    kind = "exact" if dtype.is_int else "bit-exact"
    what = f"Arrays are not equal ({kind}, {dtype})" + (f"\n{err_msg}" if err_msg else "")
    got, want = _actual_bits(actual, expected.shape, dtype, what), to_bits(expected, dtype)
    bad = got != want
    count = int(np.count_nonzero(bad))
    if not count:
        return
    got_v, want_v = decode(got, dtype), decode(want, dtype)
    with np.errstate(invalid="ignore"):
        diff = np.abs(got_v - want_v)
    diff = np.where(np.isnan(diff), np.inf, diff)  # a NaN on either side is as bad as it gets
    flat_bad = np.flatnonzero(bad)
    order = flat_bad[np.argsort(-diff.reshape(-1)[flat_bad], kind="stable")][:_SHOWN]
    lines = [what, f"Mismatched elements: {count} / {actual.size} ({100.0 * count / actual.size:.3g}%)"]
    finite = diff.reshape(-1)[flat_bad]
    if np.isfinite(finite).any():
        lines.append(f"Max absolute difference among mismatches: {float(np.max(finite[np.isfinite(finite)])):.6g}")
    lines.append(f"Worst {len(order)}:")
    for flat in order:
        g, w = got.reshape(-1)[flat], want.reshape(-1)[flat]
        lines.append(f"  index {_index(flat, actual.shape)}: actual {_value(g, got_v.reshape(-1)[flat], dtype)}, "
                     f"expected {_value(w, want_v.reshape(-1)[flat], dtype)}")
    raise AssertionError("\n".join(lines))


def assert_within_tolerance(actual, a64, b64, n: int | None = None, dtype: DType | str | None = None,
                            *, err_msg: str = "") -> None:
    """Check `|y - e| <= 2^-7 |e| + n 2^-22 S + n 2^-126` for every output (docs/testing.md).

    `actual`: a bf16 or f32 output (values or bits); `a64`, `b64`: the decoded operands as
    float64, broadcastable to the output shape plus the contracted axis, which is last;
    `n`: the contracted length (default: that axis's length). bf16 outputs are decoded
    with the hardware widening (subnormals flushed), as examples/'s
    `float_tolerance_ok` does."""
    actual = np.asarray(actual)
    dtype = _infer(dtype, actual)
    if dtype not in (DType.BF16, DType.F32):
        raise ValueError(f"the tolerance rule covers bf16 and f32 outputs, not {dtype}")
    a64, b64 = np.asarray(a64, np.float64), np.asarray(b64, np.float64)
    if n is None:
        n = int(np.broadcast_shapes(a64.shape, b64.shape)[-1])
    e, bound = tolerance_bound(a64, b64, n)
    what = (f"Arrays are not within tolerance ({dtype}, n={n}): |y - e| <= 2^-7 |e| + n 2^-22 S + n 2^-126"
            + (f"\n{err_msg}" if err_msg else ""))
    bits = _actual_bits(actual, e.shape, dtype, what)
    y = (bits.view(np.float32) if dtype == DType.F32 else bf16_bits_to_f32(bits)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(y - e)
        bad = ~(err <= bound)  # NaN fails
    count = int(np.count_nonzero(bad))
    if not count:
        return
    flat_bad = np.flatnonzero(bad)
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = np.where(np.isnan(err), np.inf, err / bound).reshape(-1)[flat_bad]
    order = flat_bad[np.argsort(-excess, kind="stable")][:_SHOWN]
    lines = [what, f"Mismatched elements: {count} / {actual.size} ({100.0 * count / actual.size:.3g}%)",
             f"Worst {len(order)} (by error / bound):"]
    for flat in order:
        lines.append(f"  index {_index(flat, actual.shape)}: actual {_value(bits.reshape(-1)[flat], float(y.reshape(-1)[flat]), dtype)}, "
                     f"exact {float(e.reshape(-1)[flat])!r}, error {float(err.reshape(-1)[flat]):.6g} "
                     f"> bound {float(bound.reshape(-1)[flat]):.6g}")
    raise AssertionError("\n".join(lines))


# --- the ulp check of the Vector Engine's transcendental functions -------------------------


def ulp_bound(ulps: Any) -> float:
    """The bound in ulps: a number as it is, an FpUnaryOp (or its name) from ULP_TOLERANCE."""
    if isinstance(ulps, (int, float)) and not isinstance(ulps, bool):
        return float(ulps)
    name = getattr(ulps, "name", ulps)
    if name not in ULP_TOLERANCE:
        raise ValueError(f"no ulp tolerance for {ulps!r}; known: {', '.join(ULP_TOLERANCE)}")
    return ULP_TOLERANCE[name].ulps


def ulp_errors(actual: Any, exact: Any) -> np.ndarray:
    """|actual - exact| in f32 ulps of `exact` (0 where both are the same NaN / infinity,
    inf where only one is)."""
    got = np.asarray(actual)
    got = got.view(np.float32) if got.dtype == np.uint32 else got.astype(np.float32, copy=False)
    got64, e = got.astype(np.float64), np.asarray(exact, np.float64)
    with np.errstate(all="ignore"):
        spacing = np.spacing(np.abs(e).astype(np.float32)).astype(np.float64)
        err = np.abs(got64 - e) / spacing
    special = ~np.isfinite(e) | ~np.isfinite(got64)
    same = (np.isnan(e) & np.isnan(got64)) | (got64 == e)
    return np.where(special, np.where(same, 0.0, np.inf), err)


def assert_within_ulps(actual: Any, exact: Any, ulps: Any, err_msg: str = "") -> None:
    """AssertionError listing the worst elements unless every f32 output `y` is within `ulps`
    units in the last place of the exact value `e` (float64): `|y - e| <= ulps *
    spacing(f32(|e|))`, the spacing of f32 values at |e|. `ulps` is a number, or an
    `FpUnaryOp` value or its name (`"EXP"`), meaning that op's bound in
    `ir.vector.numerics.ULP_TOLERANCE`, which holds for inputs in the op's documented range
    [lo, hi]. NaN must meet NaN, an infinity the same infinity."""
    bound = ulp_bound(ulps)
    err = ulp_errors(actual, exact)
    if err.shape != np.shape(exact):
        raise AssertionError(f"shape mismatch: actual {err.shape}, exact {np.shape(exact)}")
    bad = np.flatnonzero(err.reshape(-1) > bound)
    if not bad.size:
        return
    worst = bad[np.argsort(-err.reshape(-1)[bad], kind="stable")][:_SHOWN]
    got = np.asarray(actual).reshape(-1)
    got = got.view(np.float32) if got.dtype == np.uint32 else got
    lines = [f"Not within {bound} ulp of the exact values" + (f"\n{err_msg}" if err_msg else ""),
             f"Mismatched elements: {bad.size} / {err.size}", f"Worst {len(worst)}:"]
    for flat in worst:
        lines.append(f"  at {_index(flat, err.shape)}: actual {float(got[flat])!r}, "
                     f"exact {float(np.asarray(exact).reshape(-1)[flat])!r}, {float(err.reshape(-1)[flat]):.3g} ulp")
    raise AssertionError("\n".join(lines))
