"""The chip's floating-point formats as bit patterns: bf16 <-> f32, the 8-bit floats
(f8e4m3, f8e5m2) and f4e2m1, decoded and narrowed with integer operations only (the exact
semantics of docs/numerics.md). Below `ir.dtypes`: these codecs know formats, not dtypes;
`ir.convert` applies them per dtype, and `ir.constants` rounds a constant with them."""

from __future__ import annotations

import numpy as np

_U32 = np.uint32
F32_NAN = _U32(0x7FC00000)
_BF16_NAN = np.uint16(0x7FC0)


def _bits(x: object, dt: type) -> np.ndarray:
    """Bit patterns as an array of unsigned dtype `dt`, refusing float values.

    A signed array of the same width is reinterpreted; any other integer array is
    range-checked so that a value is never silently truncated.
    """
    arr = np.asarray(x)
    target = np.dtype(dt)
    if arr.dtype == target:
        return arr
    if arr.dtype.kind not in "ui":
        raise TypeError(f"expected {target} bit patterns, got {arr.dtype} (use to_bits)")
    if arr.dtype.kind == "i" and arr.dtype.itemsize == target.itemsize:
        return arr.view(target)
    if arr.size and (arr.min() < 0 or arr.max() > np.iinfo(target).max):
        raise ValueError(f"bit patterns out of range for {target}")
    return arr.astype(target)


def int_values(x: object) -> np.ndarray:
    """Integer values widened to int64 (exact for every type here); floats are refused."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "ui":
        raise TypeError(f"expected integer values, got {arr.dtype}")
    return arr.astype(np.int64)


# ---- bf16 <-> f32 (docs/numerics.md) ------------------------------------------------------
def widen_bf16(bits_u16: object) -> np.ndarray:
    """bf16 bits -> f32 bits: NaN -> 0x7FC00000, subnormal -> signed zero, else h << 16."""
    h = _bits(bits_u16, np.uint16).astype(_U32)
    exp, man = (h >> 7) & 0xFF, h & 0x7F
    out = np.where(exp == 0, (h >> 15) << 31, h << 16)
    return np.where((exp == 0xFF) & (man != 0), F32_NAN, out).astype(_U32)


_BLOCK = 1 << 15
"""Cells `_narrowed` casts at a time: its few 32-bit temporaries (128 KiB each) stay in cache."""


def _narrowed(bits_u32: object, relu: bool) -> np.ndarray:
    """`narrow_bf16` (or, with `relu`, `commit_cast_relu`) of f32 bits, a block at a time.

    Each block takes the usual rounding trick, `(x + 0x7FFF + ((x >> 16) & 1)) >> 16`: it is
    the rule of `narrow_bf16` for every zero, normal and infinite value (a carry out of the
    significand steps the exponent, to infinity past the largest bf16). The cells where it
    is not the rule, subnormals and NaNs, are found with two compares and set apart.
    """
    x = _bits(bits_u32, _U32)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.size, np.uint16)
    n = min(flat.size, _BLOCK)
    t, mag = np.empty(n, _U32), np.empty(n, _U32)
    odd, more = np.empty(n, np.bool_), np.empty(n, np.bool_)
    for lo in range(0, flat.size, _BLOCK):
        b = flat[lo:lo + _BLOCK]
        k = b.size
        tk, ak, ok, mk, o = t[:k], mag[:k], odd[:k], more[:k], out[lo:lo + k]
        np.right_shift(b, 16, out=tk)
        np.bitwise_and(tk, 1, out=tk)
        tk += 0x7FFF
        tk += b                       # wraps only for NaNs, which are set apart below
        np.right_shift(tk, 16, out=tk)
        o[:] = tk
        np.bitwise_and(b, 0x7FFFFFFF, out=ak)
        np.greater(ak, 0x7F800000, out=ok)        # NaN
        ak -= 1                                   # zero wraps to the top: not a subnormal
        np.less(ak, 0x7FFFFF, out=mk)             # subnormal
        ok |= mk
        if ok.any():
            at = np.flatnonzero(ok)
            v = b[at]
            o[at] = np.where((v & 0x7FFFFFFF) > 0x7F800000, _BF16_NAN, (v >> 16) & 0x8000)
        if relu:   # every negative non-NaN (-0, subnormals, normals, -inf) becomes +0
            np.subtract(b, 0x80000000, out=tk)    # negatives go to 0..0x7FFFFFFF
            np.greater(tk, 0x7F800000, out=ok)    # kept: a sign bit clear, or a NaN
            np.multiply(o, ok, out=o)             # (a masked store is 10x slower)
    return out.reshape(x.shape)


def narrow_bf16(bits_u32: object) -> np.ndarray:
    """f32 bits -> bf16 bits: RNE, subnormal -> signed zero, NaN -> 0x7FC0, overflow -> inf."""
    return _narrowed(bits_u32, False)


def commit_cast_relu(bits_u32: object) -> np.ndarray:
    """f32 bits -> bf16 bits, but a non-NaN value with its sign bit set becomes +0 (4.4);
    -0, negative subnormals and -inf all clamp, a negative NaN stays a (canonical) NaN."""
    return _narrowed(bits_u32, True)


# ---- small floats -> f32 (docs/numerics.md) ----------------------------------------------
def _small_float_table(exp_bits: int, man_bits: int, bias: int) -> np.ndarray:
    """f32 bits of every code of a 1-E-M float, by integer ops; callers patch NaN/inf codes."""
    n = 1 << (1 + exp_bits + man_bits)
    code = np.arange(n, dtype=np.int64)
    sign = (code >> (exp_bits + man_bits)) << 31
    e = (code >> man_bits) & ((1 << exp_bits) - 1)
    m = code & ((1 << man_bits) - 1)
    normal = ((e - bias + 127) << 23) | (m << (23 - man_bits))
    # A subnormal m * 2^(1-bias-M) has its leading one at bit p of m; renormalize on it.
    p = np.zeros_like(m)
    for k in range(1, man_bits):  # loop over bit positions, not elements
        p = np.where((m >> k) != 0, k, p)
    sub_exp = p + 1 - bias - man_bits + 127
    sub = (sub_exp << 23) | ((m - (1 << p)) << (23 - p))
    mag = np.where(e != 0, normal, np.where(m != 0, sub, 0))
    return (sign | mag).astype(_U32)


_E4M3_F32 = _small_float_table(4, 3, 7)
_E4M3_F32[[0x7F, 0xFF]] = F32_NAN  # both NaN codes, sign dropped
_E5M2_F32 = _small_float_table(5, 2, 15)
_E5M2_F32[0x7C], _E5M2_F32[0xFC] = 0x7F800000, 0xFF800000
_E5M2_F32[0x7D:0x80] = 0x7FC00000  # f8e5m2 NaNs keep their sign (docs/numerics.md)
_E5M2_F32[0xFD:0x100] = 0xFFC00000
_F4_F32 = _small_float_table(2, 1, 1)
# Every f8 value has at most 3 significant bits above bit 16 and an exponent far from the
# bf16 subnormal range, so the bf16 lookup is exactly the upper half of the f32 decode.
_E4M3_BF16 = (_E4M3_F32 >> 16).astype(np.uint16)
_E5M2_BF16 = (_E5M2_F32 >> 16).astype(np.uint16)


def _f4_codes(codes: object) -> np.ndarray:
    """f4e2m1 codes 0..15 as uint8; a larger code is an error, never a silent wrap."""
    c = _bits(codes, np.uint8)
    if c.size and c.max() > 0xF:
        raise ValueError("f4e2m1 codes must lie in 0..15")
    return c


def decode_e4m3(bits_u8: object) -> np.ndarray:
    """f8e4m3 bits -> f32 bits, exact; both NaN codes -> 0x7FC00000."""
    return _E4M3_F32[_bits(bits_u8, np.uint8)]


def decode_e5m2(bits_u8: object) -> np.ndarray:
    """f8e5m2 bits -> f32 bits, exact; +-inf kept; NaN -> 0x7FC00000 / 0xFFC00000 by sign."""
    return _E5M2_F32[_bits(bits_u8, np.uint8)]


def decode_f4e2m1(codes: object) -> np.ndarray:
    """f4e2m1 codes 0..15 -> f32 bits, exact (no inf, no NaN; 0x8 is -0)."""
    return _F4_F32[_f4_codes(codes)]


# ---- f32 -> f8 (docs/numerics.md) ------------------------------------------------------------
def _rne_shift(sig: np.ndarray, n: np.ndarray) -> np.ndarray:
    """round_half_even(sig / 2^n) for sig < 2^24; any n >= 25 already rounds to 0."""
    n = np.minimum(n, 25).astype(_U32)  # keeps every shift and sum inside uint32
    q, rem, half = sig >> n, sig & ((_U32(1) << n) - 1), _U32(1) << (n - 1)
    return q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sign bit moved to bit 7, |x| bits, f32 exponent field, significand with hidden bit)."""
    a = x & 0x7FFFFFFF
    exp = a >> 23
    sig = np.where(exp == 0, a, (a & 0x7FFFFF) | (1 << 23))
    return ((x >> 24) & 0x80).astype(np.uint8), a, exp, sig


def narrow_e4m3(bits_u32: object) -> np.ndarray:
    """f32 bits -> f8e4m3 bits: RNE, saturating to +-448 (inf too), NaN -> 0x7F."""
    sign, a, exp, sig = _split(_bits(bits_u32, _U32))
    # Normal range (|x| >= 2^-6, f32 exponent >= 121): RNE to 3 mantissa bits, rebias by
    # 120; a carry moves into the exponent by itself. Smaller exponents wrap, unused.
    normal = ((a + 0x7FFFF + ((a >> 20) & 1)) >> 20) - _U32(120 << 3)
    # Subnormal range: round |x| * 2^9 = sig * 2^(exp - 141) to an integer 0..8.
    sub = _rne_shift(sig, 141 - np.maximum(exp, 1))
    mag = np.minimum(np.where(exp >= 121, normal, sub), 0x7E)  # 448 or more saturates
    out = np.where(a > 0x7F800000, np.uint8(0x7F), sign | mag.astype(np.uint8))
    return out.astype(np.uint8)


def narrow_e5m2(bits_u32: object) -> np.ndarray:
    """f32 bits -> f8e5m2 bits with the reference's rounding (half away from zero, 4.3).

    Subnormals (|x| < 2^-14) take round_half_away(|x| * 2^16) subnormal steps; a result of
    4 steps is the smallest normal, code 0x04, so [3.5, 4) * 2^-16 gives 0x04 as every
    rounding rule does (the reference's host model clamps it to 0x03: docs/numerics.md).
    Overflow goes to +-inf; NaN -> 0x7E.
    """
    sign, a, exp, sig = _split(_bits(bits_u32, _U32))
    # Normal: keep the top two mantissa bits, add f32 mantissa bit 20 (half up), rebias 112.
    normal = (a >> 21) + ((a >> 20) & 1) - _U32(112 << 2)
    # |x| * 2^16 = sig * 2^(exp - 134) is exact in f32, so rounding it half away from zero
    # is (sig + half) >> n on integers; n >= 25 gives 0 like any larger n. The subnormal
    # codes 0..3 continue into the normal codes, so 4 needs no special case.
    n = np.minimum(134 - np.maximum(exp, 1), 25).astype(_U32)
    sub = (sig + (_U32(1) << (n - 1))) >> n
    mag = np.where(exp >= 113, np.minimum(normal, 0x7C), sub)  # E reaching 31 is inf
    out = np.where(a > 0x7F800000, np.uint8(0x7E), sign | mag.astype(np.uint8))
    return out.astype(np.uint8)


# ---- table lookups (docs/numerics.md) --------------------------------------------------------
_F4_E4M3 = narrow_e4m3(_F4_F32)  # every f4e2m1 value is exact in both 8-bit formats
_F4_E5M2 = narrow_e5m2(_F4_F32)


def lut_f4e2m1_to_e4m3(codes: object) -> np.ndarray:
    """f4e2m1 codes -> f8e4m3 bits (exact table of docs/numerics.md)."""
    return _F4_E4M3[_f4_codes(codes)]


def lut_f4e2m1_to_e5m2(codes: object) -> np.ndarray:
    """f4e2m1 codes -> f8e5m2 bits (exact table of docs/numerics.md)."""
    return _F4_E5M2[_f4_codes(codes)]


def lut_e4m3_to_bf16(bits_u8: object) -> np.ndarray:
    """f8e4m3 bits -> bf16 bits, exact; NaN -> 0x7FC0."""
    return _E4M3_BF16[_bits(bits_u8, np.uint8)]


def lut_e5m2_to_bf16(bits_u8: object) -> np.ndarray:
    """f8e5m2 bits -> bf16 bits, exact; +-inf kept; NaN -> 0x7FC0 / 0xFFC0 by sign."""
    return _E5M2_BF16[_bits(bits_u8, np.uint8)]
