"""Independent oracles for the Vector Engine numerics: pure-Python integers and
`fractions.Fraction`, one element at a time, sharing no code with ir.vector."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

MIN32, MAX32 = -(2**31), 2**31 - 1


def wrap32(n: int) -> int:
    """n reduced modulo 2^32 into [-2^31, 2^31)."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def sat32(n: int) -> int:
    return MAX32 if n > MAX32 else MIN32 if n < MIN32 else n


def floor_div_pow2(n: int, s: int) -> int:
    """floor(n / 2^s) by exact rational arithmetic."""
    return math.floor(Fraction(n, 1 << s))


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def round_f32(q: Fraction, negative_zero: bool = False) -> float:
    """The exact rational q rounded to the nearest binary32 value, ties to even, with
    subnormals and overflow to infinity; returned as a Python float."""
    if q == 0:
        return -0.0 if negative_zero else 0.0
    sign, a = (-1.0 if q < 0 else 1.0), abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    quantum = Fraction(2) ** (max(e, -126) - 23)
    n = a / quantum
    k = math.floor(n)
    rest = n - k
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and k % 2 == 1):
        k += 1
    value = k * quantum
    if value >= Fraction(2) ** 128:
        return sign * math.inf
    return sign * float(value)


def ulp_f32(t: float) -> float:
    """The spacing of binary32 values at the magnitude of t (2^-149 below 2^-126)."""
    t = abs(t)
    if t < 2.0**-126:
        return 2.0**-149
    _, e = math.frexp(t)
    return 2.0 ** (e - 24)


def ordered(bits: int) -> int:
    """A binary32 bit pattern mapped to an integer that orders like the values."""
    return bits if bits < 0x80000000 else 0x80000000 - bits


def fpick(a: float, b: float, larger: bool) -> float:
    """Rust f32::max (larger) / f32::min: a NaN operand is ignored; of two zeros, +0.0 is
    the larger."""
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    if a == b == 0:
        na, nb = math.copysign(1, a) < 0, math.copysign(1, b) < 0
        return -0.0 if ((na and nb) if larger else (na or nb)) else 0.0
    return (a if a > b else b) if larger else (a if a < b else b)


def same(x: float, y: float) -> bool:
    """Equal as binary32 bit patterns, any NaN matching any NaN."""
    return (math.isnan(x) and math.isnan(y)) or f32_bits(x) == f32_bits(y)
