"""Tests for ir/convert.py: every vector of docs/numerics.md, typed in from the spec,
plus property tests against independent scalar oracles and ml_dtypes where they agree."""

from __future__ import annotations

import bisect
import inspect
import itertools
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ir.contract_arith as ca
import ir.convert as cv
from ir.dtypes import (
    ALL_DTYPES, CAST_ENGINE, COMMIT_CASTS, FETCH_CASTS, TABLE_LOOKUPS, DType, bf16, f4e2m1,
    f8e4m3, f8e5m2, f32, i4, i5, i8, i9, i16, i32, is_legal_fetch_cast, u8,
)

U32 = st.integers(0, 2**32 - 1)
FAST = settings(max_examples=300, deadline=None)


def u32(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.uint32)


def f32_of(*bits: int) -> np.ndarray:
    return u32(*bits).view(np.float32)


def hexid(v: object) -> str:
    if callable(v):  # a function by name: the same id in every process (pytest-xdist workers)
        return v.__name__
    return f"{v:X}" if isinstance(v, int) else str(v)


def ieee(bits: int, host: type) -> int:
    """What a plain ml_dtypes conversion of f32 `bits` gives (the spec's IEEE column)."""
    return int(f32_of(bits).astype(host).view(f"u{np.dtype(host).itemsize}")[0])


# ---- 8.1 f32 -> bf16 and commit_cast_relu -------------------------------------------------
V81 = [  # input, narrow_bf16, relu, IEEE (None: not given by the spec)
    (0x3F800000, 0x3F80, 0x3F80, None), (0x3F808000, 0x3F80, 0x3F80, None),
    (0x3F818000, 0x3F82, 0x3F82, None), (0x3F80C000, 0x3F81, 0x3F81, None),
    (0x3F807FFF, 0x3F80, 0x3F80, None), (0x3EAAAAAB, 0x3EAB, 0x3EAB, None),
    (0xC0490FDB, 0xC049, 0x0000, None), (0x7F7FFFFF, 0x7F80, 0x7F80, None),
    (0x7F800000, 0x7F80, 0x7F80, None), (0xFF800000, 0xFF80, 0x0000, None),
    (0x00800000, 0x0080, 0x0080, None), (0x00400000, 0x0000, 0x0000, 0x0040),
    (0x80000001, 0x8000, 0x0000, None), (0x80000000, 0x8000, 0x0000, None),
    (0x7FA00001, 0x7FC0, 0x7FC0, None), (0xFFC00000, 0x7FC0, 0x7FC0, 0xFFC0),
]


@pytest.mark.parametrize(("x", "nb", "relu", "ieee_bits"), V81, ids=hexid)
def test_81_narrow_bf16_and_relu(x: int, nb: int, relu: int, ieee_bits: int | None) -> None:
    assert int(cv.narrow_bf16(u32(x))[0]) == nb
    assert int(cv.commit_cast_relu(u32(x))[0]) == relu
    for stage in ("fetch_cast", "cast", "commit_cast"):
        assert int(cv.convert(u32(x), f32, bf16, stage)[0]) == nb
    assert int(cv.convert(u32(x), f32, bf16, "commit_cast_relu")[0]) == relu
    if ieee_bits is not None:  # proves the executor does not use the IEEE conversion
        assert ieee(x, ml_dtypes.bfloat16) == ieee_bits != nb


def test_81_vectorized_keeps_shape() -> None:
    x = np.array([r[0] for r in V81], dtype=np.uint32).reshape(4, 2, 2)
    out = cv.narrow_bf16(x)
    assert out.shape == (4, 2, 2) and out.dtype == np.uint16
    assert out.reshape(-1).tolist() == [r[1] for r in V81]
    assert cv.commit_cast_relu(x).reshape(-1).tolist() == [r[2] for r in V81]


# ---- 8.2 bf16 -> f32 -------------------------------------------------------------------------
V82 = [(0x3F80, 0x3F800000), (0xBF80, 0xBF800000), (0x4049, 0x40490000), (0x0080, 0x00800000),
       (0x007F, 0x00000000), (0x0001, 0x00000000), (0x8001, 0x80000000), (0x7F80, 0x7F800000),
       (0xFF80, 0xFF800000), (0x7F81, 0x7FC00000), (0xFFC1, 0x7FC00000), (0x7FC0, 0x7FC00000)]


@pytest.mark.parametrize(("h", "out"), V82, ids=hexid)
def test_82_widen_bf16(h: int, out: int) -> None:
    assert int(cv.widen_bf16(np.array([h], np.uint16))[0]) == out
    assert int(cv.convert(np.array([h], np.uint16), bf16, f32, "fetch_cast")[0]) == out


# ---- 8.3 / 8.4 f8e4m3 and f8e5m2 -----------------------------------------------------------
V8_DEC = [(f8e4m3, c, o) for c, o in [
    (0x00, 0x00000000), (0x80, 0x80000000), (0x01, 0x3B000000), (0x07, 0x3C600000),
    (0x08, 0x3C800000), (0x38, 0x3F800000), (0x39, 0x3F900000), (0x3F, 0x3FF00000),
    (0x7E, 0x43E00000), (0xFE, 0xC3E00000), (0x7F, 0x7FC00000), (0xFF, 0x7FC00000)]] + [
    (f8e5m2, c, o) for c, o in [
    (0x00, 0x00000000), (0x80, 0x80000000), (0x01, 0x37800000), (0x03, 0x38400000),
    (0x04, 0x38800000), (0x3C, 0x3F800000), (0x7B, 0x47600000), (0x7C, 0x7F800000),
    (0xFC, 0xFF800000), (0x7D, 0x7FC00000), (0x7E, 0x7FC00000), (0xFF, 0xFFC00000)]]
# (input, code, what ml_dtypes gives): for f8e4m3 only where the spec names it (saturation),
# for f8e5m2 the spec's "IEEE RNE" column (None: the spec's dash).
V8_ENC = [(f8e4m3, x, c, ml) for x, c, ml in [
    (0x3F800000, 0x38, None), (0xBF800000, 0xB8, None), (0x3F880000, 0x38, None),
    (0x3F980000, 0x3A, None), (0x3DCCCCCD, 0x1D, None), (0x43700000, 0x77, None),
    (0x43E00000, 0x7E, None), (0x43E80000, 0x7E, None), (0x43F00000, 0x7E, 0x7F),
    (0x49742400, 0x7E, 0x7F), (0x7F800000, 0x7E, 0x7F), (0xFF800000, 0xFE, None),
    (0x7FC00000, 0x7F, None), (0x80000000, 0x80, None), (0x3B000000, 0x01, None),
    (0x3AC00000, 0x01, None), (0x3A800000, 0x00, None), (0x3A000000, 0x00, None),
    (0x3B400000, 0x02, None), (0x3BE00000, 0x04, None), (0x3C080000, 0x04, None),
    (0x3C100000, 0x04, None)]] + [(f8e5m2, x, c, ml) for x, c, ml in [
    (0x3F800000, 0x3C, 0x3C), (0x3F900000, 0x3D, 0x3C), (0xBF900000, 0xBD, 0xBC),
    (0x3FB00000, 0x3E, 0x3E), (0x3F880000, 0x3C, 0x3C), (0x47600000, 0x7B, 0x7B),
    (0x47700000, 0x7C, 0x7C), (0x47800000, 0x7C, 0x7C), (0x4E6E6B28, 0x7C, 0x7C),
    (0x7F800000, 0x7C, 0x7C), (0x7FC00000, 0x7E, None), (0x80000000, 0x80, 0x80),
    (0x38800000, 0x04, 0x04), (0x37800000, 0x01, 0x01), (0x37C00000, 0x02, 0x02),
    (0x38200000, 0x03, 0x02), (0x38600000, 0x04, 0x04), (0x38700000, 0x04, 0x04),
    (0x37000000, 0x01, 0x00), (0x3699999A, 0x00, 0x00)]]
DECODE = {f8e4m3: cv.decode_e4m3, f8e5m2: cv.decode_e5m2}
NARROW = {f8e4m3: cv.narrow_e4m3, f8e5m2: cv.narrow_e5m2}


@pytest.mark.parametrize(("d", "code", "out"), V8_DEC, ids=hexid)
def test_83_84_decode(d: DType, code: int, out: int) -> None:
    assert int(DECODE[d](np.array([code], np.uint8))[0]) == out
    assert int(cv.convert(np.array([code], np.uint8), d, f32, "fetch_cast")[0]) == out


@pytest.mark.parametrize(("d", "x", "code", "ml"), V8_ENC, ids=hexid)
def test_83_84_narrow(d: DType, x: int, code: int, ml: int | None) -> None:
    assert int(NARROW[d](u32(x))[0]) == code
    assert int(cv.convert(u32(x), f32, d, "cast")[0]) == code
    if ml is not None:
        assert ieee(x, d.host_dtype) == ml


# ---- 8.5 table lookups -----------------------------------------------------------------------
V85_F4 = [(0x0, 0x00, 0x00, 0.0), (0x1, 0x30, 0x38, 0.5), (0x2, 0x38, 0x3C, 1.0),
          (0x3, 0x3C, 0x3E, 1.5), (0x4, 0x40, 0x40, 2.0), (0x5, 0x44, 0x42, 3.0),
          (0x6, 0x48, 0x44, 4.0), (0x7, 0x4C, 0x46, 6.0), (0x8, 0x80, 0x80, -0.0),
          (0x9, 0xB0, 0xB8, -0.5), (0xA, 0xB8, 0xBC, -1.0), (0xB, 0xBC, 0xBE, -1.5),
          (0xC, 0xC0, 0xC0, -2.0), (0xD, 0xC4, 0xC2, -3.0), (0xE, 0xC8, 0xC4, -4.0),
          (0xF, 0xCC, 0xC6, -6.0)]
V85_LUT = [(f8e4m3, 0x01, 0x3B00), (f8e4m3, 0x38, 0x3F80), (f8e4m3, 0xB8, 0xBF80),
           (f8e4m3, 0x7E, 0x43E0), (f8e4m3, 0x7F, 0x7FC0), (f8e4m3, 0xFF, 0x7FC0),
           (f8e5m2, 0x01, 0x3780), (f8e5m2, 0x3C, 0x3F80), (f8e5m2, 0x7B, 0x4760),
           (f8e5m2, 0x7C, 0x7F80), (f8e5m2, 0x7E, 0x7FC0), (f8e5m2, 0xFE, 0xFFC0)]


@pytest.mark.parametrize(("code", "e4", "e5", "value"), V85_F4)
def test_85_f4e2m1_tables(code: int, e4: int, e5: int, value: float) -> None:
    c = np.array([code], np.uint8)
    assert int(cv.lut_f4e2m1_to_e4m3(c)[0]) == e4
    assert int(cv.lut_f4e2m1_to_e5m2(c)[0]) == e5
    assert int(cv.convert(c, f4e2m1, f8e4m3, "table_lookup")[0]) == e4
    assert int(cv.convert(c, f4e2m1, f8e5m2, "table_lookup")[0]) == e5
    got = float(cv.decode_f4e2m1(c).view(np.float32)[0])
    assert got == value and np.signbit(got) == np.signbit(value)
    assert float(c.view(ml_dtypes.float4_e2m1fn)[0]) == value  # the host form agrees


@pytest.mark.parametrize(("src", "code", "out"), V85_LUT, ids=str)
def test_85_f8_to_bf16(src: DType, code: int, out: int) -> None:
    fn = cv.lut_e4m3_to_bf16 if src == f8e4m3 else cv.lut_e5m2_to_bf16
    assert int(fn(np.array([code], np.uint8))[0]) == out
    assert int(cv.convert(np.array([code], np.uint8), src, bf16, "table_lookup")[0]) == out


# ---- 8.6 integers ----------------------------------------------------------------------------
V86 = [(7, 7, 7, 7), (8, -8, 8, 8), (-8, -8, -8, -8), (-9, 7, -9, -9), (127, -1, 127, 127),
       (128, 0, -128, 128), (200, -8, -56, 200), (-129, -1, 127, -129), (32767, -1, -1, 32767),
       (32768, 0, 0, -32768), (70000, 0, 112, 4464), (-1, -1, -1, -1), (2147483647, -1, -1, -1)]


@pytest.mark.parametrize(("x", "a", "b", "c"), V86)
def test_86_wrap(x: int, a: int, b: int, c: int) -> None:
    v = np.array([x], np.int32)
    for dst, want in ((i4, a), (i8, b), (i16, c)):
        assert int(cv.wrap(v, dst)[0]) == want
        out = cv.convert(v, i32, dst, "cast")
        assert int(out[0]) == want and out.dtype == dst.host_dtype


@pytest.mark.parametrize(("src", "bits", "out"), [
    (i4, np.uint8(0xF), 0xFFFFFFFF), (i4, np.uint8(0x8), 0xFFFFFFF8),
    (i8, np.uint8(0x80), 0xFFFFFF80), (i16, np.uint16(0x8000), 0xFFFF8000),
])
def test_86_widening(src: DType, bits: np.generic, out: int) -> None:
    got = cv.convert(np.array([bits]), src, i32, "fetch_cast")
    assert got.dtype == np.int32 and int(got.view(np.uint32)[0]) == out


def test_86_sign_extend_i4() -> None:
    assert cv.wrap(np.arange(16, dtype=np.uint8), i4).tolist() == [*range(8), *range(-8, 0)]


@pytest.mark.parametrize(("src", "x", "zp", "out"), [(i8, 127, -128, 255), (i8, -128, 127, -255),
                                                     (i4, -8, 7, -15), (i4, 7, -8, 15)])
def test_86_zero_point_sub(src: DType, x: int, zp: int, out: int) -> None:
    dst = i5 if src == i4 else i9
    assert int(cv.zero_point_sub(np.array([x], np.int8), zp, src)[0]) == out
    got = cv.convert(np.array([x], np.int8), src, dst, "zero_point_sub", zero_point=zp)
    assert int(got[0]) == out


@pytest.mark.parametrize(("src", "zp"), [(i8, 128), (i8, -129), (i4, 8), (i4, -9), (i8, 1.0)])
def test_86_zero_point_refused(src: DType, zp: object) -> None:
    with pytest.raises(ValueError, match="FZPS-2"):
        cv.zero_point_sub(np.array([0], np.int8), zp, src)  # type: ignore[arg-type]


def test_86_u8_identity_only() -> None:
    x = np.array([0xFF], np.uint8)
    assert cv.convert(x, u8, u8, "fetch_cast").tolist() == [0xFF]
    with pytest.raises(ValueError):
        cv.convert(x, u8, i32, "fetch_cast")


# ---- 8.7 contraction arithmetic --------------------------------------------------------------
def test_87_tree_order() -> None:
    leaves = np.array([1, 2.0**-24, 2.0**-24, -1], np.float32)
    assert int(ca.tree_sum_f32(leaves).view(np.uint32)) == 0x33800000
    serial = np.float32(0)
    for v in leaves:
        serial = np.float32(serial + v)
    assert serial.view(np.uint32) == 0  # the left fold the spec contrasts with


V87 = [  # op, a, b as (dtype, bits), result, what plain IEEE f32 gives where the spec says
    (ca.fadd, (f32, 0x00C00000), (f32, 0x80800000), 0x00000000, 0x00400000),  # flush on add
    (ca.fmul, (bf16, (127 - 64) << 7), (bf16, (127 - 63) << 7), 0x00000000, 0x00400000),
    (ca.fmul, (bf16, 0x0001), (bf16, 0x3F80), 0x00000000, None),  # flushed operand
    (ca.fadd, (f32, 0x7F800000), (f32, 0xFF800000), 0x7FC00000, None),  # inf - inf
    (ca.fadd, (f32, 0x00000000), (f32, 0x80000000), 0x00000000, None),  # +0 + -0
]


def _operand(spec: tuple[DType, int]) -> np.ndarray:
    d, bits = spec
    return (cv.widen_bf16(np.array([bits], np.uint16)) if d == bf16 else u32(bits)).view(np.float32)


@pytest.mark.parametrize(("op", "a", "b", "out", "plain"), V87, ids=hexid)
def test_87_float_arithmetic(op: object, a: tuple[DType, int], b: tuple[DType, int], out: int,
                             plain: int | None) -> None:
    x, y = _operand(a), _operand(b)
    assert int(op(x, y).view(np.uint32)[0]) == out  # type: ignore[operator]
    if plain is not None:
        ref = np.multiply(x, y) if op is ca.fmul else np.add(x, y)
        assert int(ref.view(np.uint32)[0]) == plain


def test_tree_refuses_non_power_of_two() -> None:
    with pytest.raises(ValueError):
        ca.tree_sum_f32(np.ones(3, np.float32))


def _tree_oracle(leaves: list[np.float32]) -> np.float32:
    """Scalar adjacent-pair tree with flush, written independently of convert.py."""
    def add(a: np.float32, b: np.float32) -> np.float32:
        with np.errstate(all="ignore"):
            r = np.float32(a + b)
        if np.isnan(r):
            return np.uint32(0x7FC00000).view(np.float32)
        return np.float32(np.copysign(0.0, r)) if abs(r) < 2.0**-126 else r
    while len(leaves) > 1:
        leaves = [add(leaves[i], leaves[i + 1]) for i in range(0, len(leaves), 2)]
    return leaves[0]


@FAST
@given(st.integers(0, 5).flatmap(lambda k: st.lists(U32, min_size=2**k, max_size=2**k)))
def test_tree_sum_f32_matches_scalar_tree(bits: list[int]) -> None:
    leaves = ca.ftz_f32(f32_of(*bits))  # engine operands are already flushed
    want = _tree_oracle(list(leaves)).view(np.uint32)
    assert int(ca.tree_sum_f32(leaves).view(np.uint32)) == int(want)


# ---- properties: bf16 ------------------------------------------------------------------------
def _narrow_bf16_scalar(x: int) -> int:
    """docs/numerics.md narrow_bf16 on one python int, independent of the vectorized code."""
    exp, man = (x >> 23) & 0xFF, x & 0x7FFFFF
    if exp == 0xFF and man:
        return 0x7FC0
    if exp == 0:
        return (x >> 31) << 15
    upper, lower = x >> 16, x & 0xFFFF
    return upper + (lower > 0x8000 or (lower == 0x8000 and upper & 1 == 1))


@FAST
@given(st.lists(U32, min_size=1, max_size=64))
@example([0x7F7FFFFF, 0x3F808000, 0x3F818000, 0x807FFFFF, 0xFF7FFFFF, 0x7F800001])
def test_narrow_bf16_matches_scalar_oracle(xs: list[int]) -> None:
    assert cv.narrow_bf16(u32(*xs)).tolist() == [_narrow_bf16_scalar(x) for x in xs]
    relu = [0 if x >> 31 and (x & 0x7FFFFFFF) <= 0x7F800000 else _narrow_bf16_scalar(x) for x in xs]
    assert cv.commit_cast_relu(u32(*xs)).tolist() == relu


def test_widen_bf16_exhaustive_round_trip() -> None:
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    exp, man = (h >> 7) & 0xFF, h & 0x7F
    nan, sub = (exp == 0xFF) & (man != 0), exp == 0
    wide = cv.widen_bf16(h)
    back = cv.narrow_bf16(wide)
    plain = ~nan & ~sub
    assert np.array_equal(back[plain], h[plain])
    assert np.all(wide[nan] == 0x7FC00000) and np.all(back[nan] == 0x7FC0)
    assert np.array_equal(wide[sub], (h[sub].astype(np.uint32) >> 15) << 31)
    # ml_dtypes agrees on every pattern the device keeps as is (an oracle, not the code).
    ref = h.view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)
    assert np.array_equal(wide[plain], ref[plain])
    assert not np.array_equal(wide[sub], ref[sub])  # ml_dtypes keeps bf16 subnormals


# ---- properties: f8 encode -------------------------------------------------------------------
def _f32_fraction(x: int) -> Fraction:
    exp, man = (x >> 23) & 0xFF, x & 0x7FFFFF
    mag = Fraction(man, 1 << 149) if exp == 0 else Fraction(man | 1 << 23) * Fraction(2) ** (exp - 150)
    return -mag if x >> 31 else mag


def _grid(exp_bits: int, man_bits: int, bias: int, n_codes: int) -> list[Fraction]:
    """Magnitudes of codes 0..n_codes-1 from the docs/numerics.md formulas."""
    out = []
    for c in range(n_codes):
        e, m = c >> man_bits, c & ((1 << man_bits) - 1)
        frac = Fraction(m, 1 << man_bits)
        out.append(frac * Fraction(2) ** (1 - bias) if e == 0 else (1 + frac) * Fraction(2) ** (e - bias))
    return out


E4M3_GRID = _grid(4, 3, 7, 0x7F)  # 0 .. 448
E5M2_GRID = _grid(5, 2, 15, 0x7D)  # 0 .. 57344, with code 0x7C standing for 2^16


def _e4m3_oracle(x: int) -> int:
    if (x & 0x7FFFFFFF) > 0x7F800000:
        return 0x7F
    sign = (x >> 31) << 7
    if (x & 0x7FFFFFFF) == 0x7F800000:
        return sign | 0x7E
    v = abs(_f32_fraction(x))
    i = bisect.bisect_left(E4M3_GRID, v)
    if i >= len(E4M3_GRID):
        return sign | 0x7E  # beyond 448 saturates
    lo, hi = max(i - 1, 0), i
    dl, dh = v - E4M3_GRID[lo], E4M3_GRID[hi] - v
    return sign | (lo if dl < dh or (dl == dh and lo % 2 == 0) else hi)


def _e5m2_oracle(x: int) -> int:
    if (x & 0x7FFFFFFF) > 0x7F800000:
        return 0x7E
    sign = (x >> 31) << 7
    v = abs(_f32_fraction(x)) if (x & 0x7FFFFFFF) != 0x7F800000 else Fraction(2) ** 20
    if v < Fraction(1, 1 << 14):  # the reference's subnormal path
        scaled = v * (1 << 16)
        return sign | int(scaled + Fraction(1, 2))  # floor(v + 1/2): half away from 0; 4 is 0x04
    i = bisect.bisect_left(E5M2_GRID, v)
    if i >= len(E5M2_GRID):
        return sign | 0x7C
    lo, hi = i - 1, i
    nearest = lo if v - E5M2_GRID[lo] < E5M2_GRID[hi] - v else hi  # ties go up in magnitude
    return sign | min(nearest if v != E5M2_GRID[i] else i, 0x7C)


SUB_RANGE = st.integers(0x30000000, 0x3D000000).flatmap(lambda a: st.sampled_from([a, a | 1 << 31]))


@FAST
@given(st.lists(st.one_of(U32, SUB_RANGE), min_size=1, max_size=32))
@example([0x43E80000, 0x43E7FFFF, 0x3A800001, 0x3C7FFFFF, 0x00000001])
def test_narrow_e4m3_matches_fraction_oracle(xs: list[int]) -> None:
    assert cv.narrow_e4m3(u32(*xs)).tolist() == [_e4m3_oracle(x) for x in xs]


@FAST
@given(st.lists(st.one_of(U32, SUB_RANGE), min_size=1, max_size=32))
@example([0x38600000, 0x387FFFFF, 0x37000000, 0x36FFFFFF, 0x47700000, 0x476FFFFF])
def test_narrow_e5m2_matches_fraction_oracle(xs: list[int]) -> None:
    assert cv.narrow_e5m2(u32(*xs)).tolist() == [_e5m2_oracle(x) for x in xs]


def _sweep() -> np.ndarray:
    """Every sign/exponent/top-3-mantissa prefix with the rounding-relevant low-20 patterns,
    plus 2^18 random patterns."""
    low = np.array([0, 1, 0x3FFFF, 0x40000, 0x40001, 0x7FFFF, 0x80000, 0x80001, 0xC0000, 0xFFFFF])
    top = np.arange(1 << 12, dtype=np.int64) << 20
    rand = np.random.default_rng(0).integers(0, 1 << 32, size=1 << 18, dtype=np.int64)
    return np.concatenate([(top[:, None] | low[None, :]).ravel(), rand]).astype(np.uint32)


def test_narrow_e4m3_equals_ml_dtypes_below_464() -> None:
    x = _sweep()
    keep = np.abs(x.view(np.float32)) < 464  # also drops NaN
    x = x[keep]
    ref = x.view(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert x.size > 100_000 and np.array_equal(cv.narrow_e4m3(x), ref)


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-463.875, max_value=463.875))
def test_narrow_e4m3_equals_ml_dtypes_hypothesis(v: float) -> None:
    x = np.array([v], np.float32)
    assert cv.narrow_e4m3(x.view(np.uint32)).tolist() == x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).tolist()


def test_narrow_e5m2_equals_ml_dtypes_off_ties() -> None:
    x = _sweep()
    a = x & 0x7FFFFFFF
    normal = (a >= 0x38800000) & (a < 0x47700000)  # [2^-14, 61440): no overflow, no subnormal
    off_tie = (x & 0x1FFFFF) != 0x100000  # exact halfway is where half-up and RNE differ
    x = x[normal & off_tie]
    ref = x.view(np.float32).astype(ml_dtypes.float8_e5m2).view(np.uint8)
    assert x.size > 30_000 and np.array_equal(cv.narrow_e5m2(x), ref)


# ---- properties: decodes and lookups ---------------------------------------------------------
CODES = np.arange(256, dtype=np.int64).astype(np.uint8)


@pytest.mark.parametrize(("fn", "host"), [(cv.decode_e4m3, ml_dtypes.float8_e4m3fn),
                                          (cv.decode_e5m2, ml_dtypes.float8_e5m2)])
def test_decode_all_codes_equal_ml_dtypes(fn: object, host: type) -> None:
    ours = fn(CODES)  # type: ignore[operator]
    ref = CODES.view(host).astype(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(ours[~nan], ref[~nan].view(np.uint32))
    assert set((ours[nan] & 0x7FFFFFFF).tolist()) == {0x7FC00000}  # canonical (sign per 3.2)


def test_decode_f4e2m1_all_codes() -> None:
    c = np.arange(16, dtype=np.uint8)
    assert np.array_equal(cv.decode_f4e2m1(c), c.view(ml_dtypes.float4_e2m1fn).astype(np.float32).view(np.uint32))


@pytest.mark.parametrize(("lut", "dec", "host"), [
    (cv.lut_e4m3_to_bf16, cv.decode_e4m3, ml_dtypes.float8_e4m3fn),
    (cv.lut_e5m2_to_bf16, cv.decode_e5m2, ml_dtypes.float8_e5m2),
])
def test_f8_to_bf16_lookup_is_exact(lut: object, dec: object, host: type) -> None:
    out = lut(CODES)  # type: ignore[operator]
    assert np.array_equal(out, dec(CODES) >> 16)  # type: ignore[operator]  # exact: low half is 0
    assert not np.any(dec(CODES) & 0xFFFF)  # type: ignore[operator]
    ref = CODES.view(host).astype(ml_dtypes.bfloat16)
    nan = np.isnan(ref)
    assert np.array_equal(out[~nan], ref[~nan].view(np.uint16))


# ---- properties: integers and packing --------------------------------------------------------
@FAST
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=32))
def test_wrap_is_modular(xs: list[int]) -> None:
    v = np.array(xs, np.int64)
    for d in (i4, i8, i16, i32):
        m = 1 << d.bits
        assert cv.wrap(v, d).tolist() == [(x + m // 2) % m - m // 2 for x in xs]


# ---- host forms and the dispatcher -----------------------------------------------------------
@pytest.mark.parametrize("d", [bf16, f32, f8e4m3, f8e5m2, f4e2m1], ids=str)
def test_to_bits_from_bits_are_views(d: DType) -> None:
    host = np.array([0.5, -1.5, 0.0, 6.0], np.float32).astype(d.host_dtype)
    bits = cv.to_bits(host, d)
    assert bits.dtype == d.bits_dtype and np.shares_memory(bits, host)
    back = cv.from_bits(bits, d)
    assert back.dtype == d.host_dtype and np.array_equal(back.view(d.bits_dtype), bits)
    assert np.array_equal(cv.to_bits(bits, d), bits)


def test_to_bits_integers_and_refusals() -> None:
    assert cv.to_bits(np.array([-1, -8, 7], np.int8), i4).tolist() == [0xF, 0x8, 0x7]
    assert cv.from_bits(np.array([0xF, 0x8], np.uint8), i4).tolist() == [-1, -8]
    assert cv.to_bits(np.array([-1], np.int32), i32).tolist() == [0xFFFFFFFF]
    with pytest.raises(TypeError):
        cv.to_bits(np.array([1.0]), f32)  # float64 is not an f32 host form
    with pytest.raises(ValueError):
        cv.to_bits(np.array([8], np.int8), i4)
    with pytest.raises(ValueError):
        cv.to_bits(np.array([16], np.uint8), f4e2m1)
    with pytest.raises(ValueError):
        cv.to_bits(np.array([1], np.int8), i9)
    with pytest.raises(TypeError):
        cv.narrow_bf16(np.array([1.0], np.float32))  # values are not bit patterns


LEGAL = {
    "fetch_cast": lambda s, d: is_legal_fetch_cast(s, d), "table_lookup": lambda s, d: (s, d) in TABLE_LOOKUPS,
    "cast": lambda s, d: (s, d) in CAST_ENGINE, "commit_cast": lambda s, d: (s, d) in COMMIT_CASTS,
    "commit_cast_relu": lambda s, d: (s, d) in COMMIT_CASTS,
}


@pytest.mark.parametrize("stage", list(LEGAL))
def test_convert_legality_exhaustive(stage: str) -> None:
    for s, d in itertools.product(ALL_DTYPES, repeat=2):
        x = np.zeros(4, (s.bits_dtype if s.is_float else s.host_dtype) if s.materializable else np.int8)
        if LEGAL[stage](s, d):
            out = cv.convert(x, s, d, stage)
            assert out.shape == (4,) and out.dtype == (d.bits_dtype if d.is_float else d.host_dtype)
        else:
            with pytest.raises(ValueError):
                cv.convert(x, s, d, stage)
    assert set(FETCH_CASTS) <= {(s, d) for s in ALL_DTYPES for d in ALL_DTYPES if LEGAL["fetch_cast"](s, d)}


def test_convert_refuses_unknown_stage_and_accepts_host_floats() -> None:
    with pytest.raises(ValueError, match="fetch_cast"):
        cv.convert(u32(0), f32, bf16, "narrow")
    host = f32_of(0x3F808000, 0x00400000)
    assert cv.convert(host, f32, bf16, "cast").tolist() == [0x3F80, 0x0000]


def test_convert_module_never_uses_ml_dtypes() -> None:
    src = inspect.getsource(cv)
    assert "import ml_dtypes" not in src and "ml_dtypes." not in src


def _below(top: int, step: int) -> np.ndarray:
    """Every `step`-th positive f32 pattern below `top`, with their negatives and the patterns
    next to each subnormal step boundary of both f8 types."""
    grid = np.arange(0x30000000, top, step, dtype=np.int64)
    edges = np.array([0x38600000, 0x387FFFFF, 0x38700000, 0x3C7FFFFF, 0x3C780000, 0x3C700000, 0x3BFFFFFF,
                      0x37000000, 0x37C00000, 0x38200000], np.int64)  # and the e5m2 ties 0.5, 1.5, 2.5 steps
    pos = np.concatenate([grid, edges, edges - 1, edges + 1])
    return np.concatenate([pos, pos | (1 << 31)]).astype(np.uint32)


def test_narrow_e5m2_subnormal_range_equals_ml_dtypes_off_ties():
    """Issue 28 item 5: [3.5, 4) * 2^-16 rounds to the smallest normal 0x04, as ml_dtypes does;
    only exact ties (x * 2^16 = k + 1/2) differ: they round away from zero."""
    x = _below(0x38800000, 97)  # |x| < 2^-14: the subnormal path
    scaled = np.abs(x.view(np.float32).astype(np.float64)) * 2.0 ** 16
    tie = scaled - np.floor(scaled) == 0.5
    ref = x.view(np.float32).astype(ml_dtypes.float8_e5m2).view(np.uint8)
    ours = cv.narrow_e5m2(x)
    assert x.size > 1_000_000 and np.array_equal(ours[~tie], ref[~tie])
    away = (np.floor(scaled[tie]) + 1).astype(np.uint8) | ((x[tie] >> 24) & 0x80).astype(np.uint8)
    assert tie.sum() >= 8 and np.array_equal(ours[tie], away)
    assert cv.narrow_e5m2(u32(0x38600000, 0x387FFFFF, 0xB87FFFFF)).tolist() == [0x04, 0x04, 0x84]


def test_narrow_e4m3_subnormal_range_equals_ml_dtypes():
    """f8e4m3 below 2^-6 (subnormal steps of 2^-9, ties to even; 8 steps is 0x08 = 2^-6)."""
    x = _below(0x3C800000, 97)
    ref = x.view(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert x.size > 1_000_000 and np.array_equal(cv.narrow_e4m3(x), ref)
    assert cv.narrow_e4m3(u32(0x3C7FFFFF, 0x3C780000, 0x3C700000, 0x3A800000, 0x3A800001)).tolist() == [
        0x08, 0x08, 0x08, 0x00, 0x01]
