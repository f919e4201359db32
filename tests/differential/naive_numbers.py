"""Scalar arithmetic of the naive reference model (tests/differential/naive_model.py).

Written from the dtype rules (docs/numerics.md: host semantics, conversions by stage,
contraction arithmetic), sharing no code with `ir.convert`, `ir.contract_arith` or the backends. Values are
kept as bit patterns for the float types (`uint32` for f32, `uint16` for bf16, `uint8`
for the f8 and f4 codes) and as `int64` numbers for the integer types. numpy's float32
operations are IEEE binary32 with round-to-nearest-even; on top of them this module
applies the device rules explicitly:

- flush: an f32 result below 2^-126 in magnitude becomes a zero of its sign (the device
  has no subnormals) -- after every multiply and add of the Contraction Engine, and on
  every conversion that produces f32 or bf16 (a bf16 subnormal input reads as zero);
- one NaN: a NaN made by a conversion to f32 is 0x7FC00000, to bf16 0x7FC0; f8e5m2
  decodes keep the NaN's sign; f32 -> f8e4m3 gives 0x7F and f32 -> f8e5m2 0x7E;
- rounding: f32 -> bf16 and f32 -> f8e4m3 round to nearest even (f8e4m3 saturating to
  448), f32 -> f8e5m2 rounds half away from zero on its two kept mantissa bits;
- integers wrap (low bits kept, sign-extended), nothing saturates.

ml_dtypes is used only to decode f8 codes into exact values and for the
round-to-nearest-even onto the e4m3 grid; the NaN, overflow and zero rules around it
are applied here by hand.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

F32_NAN = np.uint32(0x7FC00000)
BF16_NAN = np.uint16(0x7FC0)
SMALLEST_NORMAL = np.float32(2.0 ** -126)
INT_BITS = {"i4": 4, "i5": 5, "i8": 8, "i9": 9, "i16": 16, "i32": 32, "u8": 8}
FLOATS = {"f32", "bf16", "f8e4m3", "f8e5m2", "f4e2m1"}
F4_TO_E4M3 = [0x00, 0x30, 0x38, 0x3C, 0x40, 0x44, 0x48, 0x4C, 0x80, 0xB0, 0xB8, 0xBC, 0xC0, 0xC4, 0xC8, 0xCC]
F4_TO_E5M2 = [0x00, 0x38, 0x3C, 0x3E, 0x40, 0x42, 0x44, 0x46, 0x80, 0xB8, 0xBC, 0xBE, 0xC0, 0xC2, 0xC4, 0xC6]


def wrap(values: np.ndarray, bits: int) -> np.ndarray:
    """The low `bits` bits of integers, sign-extended (two's complement wrap)."""
    v = np.asarray(values, dtype=np.int64) & ((1 << bits) - 1)
    return np.where(v >= 1 << (bits - 1), v - (1 << bits), v)


# --- f32 as bits -------------------------------------------------------------------------

def as_f32(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def f32_bits(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def device_f32(values: np.ndarray) -> np.ndarray:
    """An IEEE f32 result as the device keeps it: flushed to a signed zero below 2^-126,
    every NaN canonical. Returns bits."""
    v = np.asarray(values, dtype=np.float32)
    bits = v.view(np.uint32).copy()
    tiny = np.abs(v) < SMALLEST_NORMAL
    bits[tiny] &= np.uint32(0x80000000)
    bits[np.isnan(v)] = F32_NAN
    return bits


def fmul(a_bits: np.ndarray, b_bits: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return device_f32(as_f32(a_bits) * as_f32(b_bits))


def fadd(a_bits: np.ndarray, b_bits: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return device_f32(as_f32(a_bits) + as_f32(b_bits))


# --- bf16 ---------------------------------------------------------------------------------

def _widen_bf16(h: np.ndarray) -> np.ndarray:
    h = np.asarray(h, dtype=np.uint32)
    exp, mant, sign = (h >> 7) & 0xFF, h & 0x7F, h >> 15
    out = h << 16
    out = np.where(exp == 0, sign << 31, out)
    return np.where((exp == 0xFF) & (mant != 0), F32_NAN, out).astype(np.uint32)


_WIDE_BF16 = _widen_bf16(np.arange(1 << 16))  # the rule above for each of the 2^16 patterns


def widen_bf16(h: np.ndarray) -> np.ndarray:
    """bf16 bits -> f32 bits: NaN canonical, a zero exponent field reads as a signed zero."""
    return _WIDE_BF16[np.asarray(h, dtype=np.uint16)]


def narrow_bf16(x: np.ndarray) -> np.ndarray:
    """f32 bits -> bf16 bits: NaN canonical, zero/subnormal to a signed zero, else RNE on
    the upper half (a carry into the exponent is right; the top finite value rounds to inf)."""
    x = np.asarray(x, dtype=np.uint32)
    exp, mant = (x >> 23) & 0xFF, x & 0x7FFFFF
    upper, lower = x >> 16, x & 0xFFFF
    up = (lower > 0x8000) | ((lower == 0x8000) & ((upper & 1) == 1))
    out = upper + up.astype(np.uint32)
    out = np.where(exp == 0, (x >> 31) << 15, out)
    out = np.where((exp == 0xFF) & (mant != 0), np.uint32(BF16_NAN), out)
    return out.astype(np.uint16)


def relu_bf16(x: np.ndarray) -> np.ndarray:
    """commit_cast_relu: a non-NaN value with its sign bit set becomes +0, else narrow_bf16."""
    x = np.asarray(x, dtype=np.uint32)
    negative = ((x >> 31) == 1) & ~np.isnan(as_f32(x))
    return np.where(negative, np.uint16(0), narrow_bf16(x)).astype(np.uint16)


# --- f8 / f4 -----------------------------------------------------------------------------

def decode_f8(codes: np.ndarray, dtype: str) -> np.ndarray:
    """f8 code -> f32 bits, exact; NaN 0x7FC00000, but an f8e5m2 NaN keeps its sign."""
    codes = np.asarray(codes, dtype=np.uint8)
    ml = ml_dtypes.float8_e4m3fn if dtype == "f8e4m3" else ml_dtypes.float8_e5m2
    values = codes.view(ml).astype(np.float32)
    bits = values.view(np.uint32).copy()
    nan = np.isnan(values)
    if dtype == "f8e5m2":
        bits[nan] = np.where(codes[nan] >= 0x80, np.uint32(0xFFC00000), F32_NAN)
    else:
        bits[nan] = F32_NAN
    return bits


def f8_to_bf16(codes: np.ndarray, dtype: str) -> np.ndarray:
    """The table lookup f8 -> bf16: every f8 value is a bf16 value (exact upper halves)."""
    return (decode_f8(codes, dtype) >> 16).astype(np.uint16)


def f4_to_f8(codes: np.ndarray, dtype: str) -> np.ndarray:
    table = np.array(F4_TO_E4M3 if dtype == "f8e4m3" else F4_TO_E5M2, dtype=np.uint8)
    return table[np.asarray(codes, dtype=np.int64) & 0xF]


def narrow_e4m3(x: np.ndarray) -> np.ndarray:
    """f32 bits -> f8e4m3: RNE on the e4m3 grid, saturating at +-448 (inf too), NaN 0x7F."""
    x = np.asarray(x, dtype=np.uint32)
    v = as_f32(x)
    sign = ((x >> 31) << 7).astype(np.uint8)
    with np.errstate(all="ignore"):
        rounded = np.abs(v).astype(ml_dtypes.float8_e4m3fn)
    mag = rounded.view(np.uint8) & 0x7F
    overflow = np.isnan(rounded.astype(np.float32)) | np.isinf(v)
    mag = np.where(overflow, np.uint8(0x7E), mag)
    return np.where(np.isnan(v), np.uint8(0x7F), sign | mag).astype(np.uint8)


def narrow_e5m2(x: np.ndarray) -> np.ndarray:
    """f32 bits -> f8e5m2 with the rounding of docs/numerics.md (half up in magnitude on the two
    kept mantissa bits; subnormals by round-half-away of |x| * 2^16, where 4 is the smallest
    normal, code 0x04)."""
    x = np.asarray(x, dtype=np.uint32)
    v = as_f32(x)
    sign = ((x >> 31) << 7).astype(np.int64)
    big_e = ((x >> 23) & 0xFF).astype(np.int64) - 127 + 15
    normal = (big_e << 2) | ((x >> 21) & 3).astype(np.int64)
    normal = np.minimum(normal + ((x >> 20) & 1).astype(np.int64), 0x7C)
    with np.errstate(all="ignore"):
        scaled = np.where(big_e <= 0, np.abs(v).astype(np.float64), 0.0) * 65536.0   # exact: |x| < 2^-14
    whole = np.floor(scaled)
    sub = (whole + (scaled - whole >= 0.5)).astype(np.int64)
    mag = np.where(big_e >= 31, 0x7C, np.where(big_e <= 0, sub, normal))
    mag = np.where(np.isinf(v), 0x7C, mag)
    mag = np.where(v == 0, 0, mag)
    return np.where(np.isnan(v), 0x7E, sign | mag).astype(np.uint8)


# --- the contraction's operand widening ---------------------------------------------------

def widen_operand(values: np.ndarray, dtype: str) -> np.ndarray:
    """An operand element in its accumulator type: ints as int64, floats as f32 bits."""
    if dtype in INT_BITS:
        return np.asarray(values, dtype=np.int64)
    if dtype == "bf16":
        return widen_bf16(values)
    return decode_f8(values, dtype)


def accumulator(dtype: str) -> str:
    return "i32" if dtype in INT_BITS else "f32"


def zeros(n: int, dtype: str) -> np.ndarray:
    """n zero bit patterns / values of `dtype` in the model's storage."""
    return np.zeros(n, dtype=storage(dtype))


def storage(dtype: str) -> np.dtype:
    if dtype in INT_BITS:
        return np.dtype(np.int64)
    return np.dtype({"f32": np.uint32, "bf16": np.uint16}.get(dtype, np.uint8))
