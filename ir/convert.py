"""Vectorized scalar conversions with the chip's exact semantics (docs/numerics.md).

Floats are handled as unsigned bit patterns and converted with integer operations,
never with numpy/ml_dtypes `astype`, which keeps subnormals and NaN payloads, turns
f8e4m3 overflow into NaN and rounds f8e5m2 ties to even (docs/numerics.md). Integer types
take their host values (int8 for i4) and wrap. The Contraction Engine's arithmetic on
these values is `ir.contract_arith`'s.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ir.dtypes import (
    CAST_ENGINE, COMMIT_CASTS, TABLE_LOOKUPS, ZERO_POINT_SUBS, DType, bf16, f4e2m1, f8e4m3,
    f8e5m2, f32, i4, i5, i8, i16, i32, is_legal_fetch_cast,
)
from ir.float_bits import (  # noqa: F401 - the per-format codecs, applied here per dtype, and re-exported
    F32_NAN, _bits, _f4_codes, commit_cast_relu, decode_e4m3, decode_e5m2, decode_f4e2m1, int_values, lut_e4m3_to_bf16,
    lut_e5m2_to_bf16, lut_f4e2m1_to_e4m3, lut_f4e2m1_to_e5m2, narrow_bf16, narrow_e4m3, narrow_e5m2, widen_bf16,
)


# ---- integers (docs/numerics.md) -----------------------------------------------------
def wrap(values: object, dtype: DType) -> np.ndarray:
    """Keep the low bits(dtype) bits and reinterpret them (i32 200 -> i8 -56); host dtype out."""
    if not dtype.is_int or not dtype.materializable:
        raise ValueError(f"wrap needs a materializable integer dtype, not {dtype}")
    width = dtype.value_bits
    low = int_values(values) & ((1 << width) - 1)
    if dtype.is_signed:
        low = low - (((low >> (width - 1)) & 1) << width)
    return low.astype(dtype.host_dtype)


def zero_point_sub(x: object, zp: int, dtype: DType) -> np.ndarray:
    """x - zp for an i4 (-> i5, int8 out) or i8 (-> i9, int16 out) source `dtype` (4.5);
    ValueError for another dtype, or a zero point (FZPS-2) or `x` outside the source range."""
    pair = next((p for p in ZERO_POINT_SUBS if p[0] == dtype), None)
    if pair is None:
        raise ValueError(f"zero-point subtraction needs an i4 or i8 source, not {dtype}")
    lo, hi = ZERO_POINT_SUBS[pair]
    if isinstance(zp, bool) or not isinstance(zp, (int, np.integer)) or not lo <= zp <= hi:
        raise ValueError(f"zero point {zp!r} outside [{lo}, {hi}] for {dtype} (FZPS-2)")
    v = int_values(x)
    if v.size and (v.min() < dtype.min or v.max() > dtype.max):
        raise ValueError(f"values outside the {dtype} range [{dtype.min}, {dtype.max}]")
    return (v - int(zp)).astype(np.int8 if pair[1] == i5 else np.int16)


# ---- host forms and the dispatcher --------------------------------------------------------
def to_bits(array: object, dtype: DType) -> np.ndarray:
    """Host array -> bit patterns in dtype.bits_dtype (a view for floats, never astype).

    Floats accept their ml_dtypes/float32 host form or unsigned bits; integers take
    host values, range-checked, and give two's complement bits (i4: the nibble).
    """
    raw = dtype.bits_dtype  # ValueError for i5/i9
    arr = np.asarray(array)
    if dtype.is_float:
        bits = arr.view(raw) if arr.dtype == dtype.host_dtype else _bits(arr, raw)
        return _f4_codes(bits) if dtype == f4e2m1 else bits
    v = int_values(arr)
    if v.size and (v.min() < dtype.min or v.max() > dtype.max):
        raise ValueError(f"values outside the {dtype} range [{dtype.min}, {dtype.max}]")
    return (v & ((1 << dtype.bits) - 1)).astype(raw)


def from_bits(bits: object, dtype: DType) -> np.ndarray:
    """Bit patterns -> host array of dtype.host_dtype (a view for floats, i4 sign-extended)."""
    raw = dtype.bits_dtype  # ValueError for i5/i9
    b = _bits(bits, raw)
    if dtype == f4e2m1:
        b = _f4_codes(b)
    return wrap(b, i4) if dtype == i4 else b.view(dtype.host_dtype)


def _sext_to_i32(src: DType) -> Callable[[np.ndarray], np.ndarray]:
    # wrap first, so both host values and raw bit patterns (i4 nibbles) sign-extend.
    return lambda v: wrap(v, src).astype(np.int32)


# One function per (src, dst): the same pair means the same function in every stage.
_PAIR_FUNCS: dict[tuple[DType, DType], Callable[[np.ndarray], np.ndarray]] = {
    (i4, i32): _sext_to_i32(i4), (i8, i32): _sext_to_i32(i8), (i16, i32): _sext_to_i32(i16),
    (f8e4m3, f32): decode_e4m3, (f8e5m2, f32): decode_e5m2,
    (bf16, f32): widen_bf16, (f32, bf16): narrow_bf16,
    (f4e2m1, f8e4m3): lut_f4e2m1_to_e4m3, (f4e2m1, f8e5m2): lut_f4e2m1_to_e5m2,
    (f8e4m3, bf16): lut_e4m3_to_bf16, (f8e5m2, bf16): lut_e5m2_to_bf16,
    (i32, i4): lambda v: wrap(v, i4), (i32, i8): lambda v: wrap(v, i8),
    (i32, i16): lambda v: wrap(v, i16),
    (f32, f8e4m3): narrow_e4m3, (f32, f8e5m2): narrow_e5m2,
}

_STAGE_LEGAL: dict[str, Callable[[DType, DType], bool]] = {
    "fetch_cast": is_legal_fetch_cast,
    "table_lookup": lambda s, d: (s, d) in TABLE_LOOKUPS,
    "cast": lambda s, d: (s, d) in CAST_ENGINE,
    "commit_cast": lambda s, d: (s, d) in COMMIT_CASTS,
    "commit_cast_relu": lambda s, d: (s, d) in COMMIT_CASTS,
    "zero_point_sub": lambda s, d: (s, d) in ZERO_POINT_SUBS,
}
STAGES: tuple[str, ...] = tuple(_STAGE_LEGAL)


def convert(bits_or_values: object, src: DType, dst: DType, stage: str, *,
            zero_point: int | None = None) -> np.ndarray:
    """Apply stage `stage`'s conversion src -> dst (docs/numerics.md) element by element.

    Float operands are bit patterns (or host arrays, turned into bits by to_bits) and
    float results are bit patterns; integers are host values in and out. The identity
    fetch_cast returns the input bits unchanged. "zero_point_sub" needs `zero_point`.
    ValueError for an unknown stage or a pair the stage's table does not hold.
    """
    legal = _STAGE_LEGAL.get(stage)
    if legal is None:
        raise ValueError(f"unknown conversion stage {stage!r}; expected one of: {', '.join(STAGES)}")
    if not legal(src, dst):
        raise ValueError(f"{stage} cannot convert {src} to {dst} (docs/numerics.md)")
    if stage == "zero_point_sub":
        if zero_point is None:
            raise ValueError("zero_point_sub needs a zero_point")
        return zero_point_sub(bits_or_values, zero_point, src)
    x = to_bits(bits_or_values, src) if src.is_float else np.asarray(bits_or_values)
    if src == dst:
        return x
    if stage == "commit_cast_relu":
        return commit_cast_relu(x)
    return _PAIR_FUNCS[(src, dst)](x)

