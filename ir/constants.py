"""The constant constructors of furiosa-opt's scalar types: `bf16.from_f32(3.0)`, `i4.from_i32(-1)`.

furiosa-opt writes a compile-time value of a narrow type as `bf16::from_f32(3.0)`,
`f8e4m3::from_f32(..)`, `f8e5m2::from_f32(..)`, `f4e2m1::from_f32(..)`, `bf16::from_bits(..)`,
`f4e2m1::from_bits(..)` and `i4::from_i32(..)` (and for the contraction stagings, `i5`/`i9`).
npu-opt offers the same names on its dtypes (`bf16.from_f32(3.0)`). Each returns the Python
number the type holds, the form every stage takes: the float after the type's rounding, or
the int. The roundings are the reference's host conversions: bf16 rounds to nearest even and
keeps subnormals (unlike the chip's narrowing, which flushes them), the 8-bit floats round as
`ir.float_bits` does, and f4e2m1 takes the nearest of its 16 values (the lowest code on a tie).

Port rule (docs/numerics.md): a value the type cannot hold is refused with DTYPE-CONST at the
user's line, where the reference keeps the low bits of an int (`i4::from_i32(9)` is -7), clamps
f4e2m1 and f8e4m3, and overflows bf16 and f8e5m2 to infinity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ir import float_bits
from ir.errors import NpuOptError
from ir.words import a_an

if TYPE_CHECKING:
    from ir.dtypes import DType

__all__ = ["ConstantError", "from_f32", "from_i32", "from_bits", "CONSTRUCTORS"]

# What furiosa-opt defines on each type (its scalar module): the constructors npu-opt offers.
CONSTRUCTORS: dict[str, tuple[str, ...]] = {
    "bf16": ("from_f32", "from_bits"), "f8e4m3": ("from_f32",), "f8e5m2": ("from_f32",),
    "f4e2m1": ("from_f32", "from_bits"), "i4": ("from_i32",), "i5": ("from_i32",), "i9": ("from_i32",),
}
_F32_MAX = float(np.finfo(np.float32).max)
# The largest magnitude that still rounds to a finite value (the type's largest value plus
# half its last step; a tie rounds down, to the even or lower code) for the two types that
# clamp in the reference instead of reaching infinity.
_CLAMP_LIMIT = {"f8e4m3": 464.0, "f4e2m1": 7.0}
_LARGEST = {"f8e4m3": 448.0, "f4e2m1": 6.0}


class ConstantError(NpuOptError):
    """A constant constructor was given a value its type cannot hold (DTYPE-CONST)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="DTYPE-CONST")


def _offered(dtype: DType, name: str) -> None:
    if name not in CONSTRUCTORS.get(dtype.value, ()):
        have = [f"{d}.{c}" for d, cs in CONSTRUCTORS.items() for c in cs if c == name]
        raise ConstantError(f"{dtype} has no `{name}` in furiosa-opt (it has it on {', '.join(have)}); "
                            f"a constant of type {dtype} is written as a plain Python number")


def _real(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConstantError(f"{what} takes a number, not {type(value).__name__}")
    return float(value)


def from_f32(dtype: DType, value: object) -> float:
    """`dtype.from_f32(value)`: the float the type holds for `value` rounded to f32, then to it."""
    _offered(dtype, "from_f32")
    x = _real(value, f"{dtype}.from_f32")
    if np.isfinite(x) and abs(x) > _F32_MAX:
        raise ConstantError(f"{dtype}.from_f32({value!r}): {x:g} is not an f32 (its largest is {_F32_MAX:g})")
    f = np.float32(x)
    name = dtype.value
    if name in _CLAMP_LIMIT and not np.isfinite(f) and not (name == "f8e4m3" and np.isnan(f)):
        raise ConstantError(f"{dtype}.from_f32({value!r}): {dtype} has no infinity or NaN")
    if name in _CLAMP_LIMIT and np.isfinite(f) and abs(float(f)) > _CLAMP_LIMIT[name]:
        raise ConstantError(f"{dtype}.from_f32({value!r}): {x:g} is beyond the largest {dtype} "
                            f"({_LARGEST[name]:g})")
    out = _round(name, f)
    if np.isfinite(f) and not np.isfinite(out):
        raise ConstantError(f"{dtype}.from_f32({value!r}): {x:g} overflows {dtype} to infinity")
    return out


def _round(name: str, f: np.float32) -> float:
    bits = np.array([f], dtype=np.float32).view(np.uint32)
    if name == "bf16":  # round to nearest even on the dropped half; NaN stays a quiet NaN
        if np.isnan(f):
            return float("nan")
        upper, lower = bits >> 16, bits & 0xFFFF
        upper = upper + ((lower > 0x8000) | ((lower == 0x8000) & ((upper & 1) == 1)))
        return float((upper << 16).astype(np.uint32).view(np.float32)[0])
    if name == "f8e4m3":
        return float(float_bits.decode_e4m3(float_bits.narrow_e4m3(bits)).view(np.float32)[0])
    if name == "f8e5m2":
        return float(float_bits.decode_e5m2(float_bits.narrow_e5m2(bits)).view(np.float32)[0])
    values = float_bits.decode_f4e2m1(np.arange(16, dtype=np.uint8)).view(np.float32)
    errors = np.abs(values - f)  # in f32, as the reference compares them
    return float(values[int(np.argmin(errors))])  # argmin keeps the first (lowest) code on a tie


def from_i32(dtype: DType, value: object) -> int:
    """`dtype.from_i32(value)`: `value` itself, refused outside the type's range."""
    _offered(dtype, "from_i32")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConstantError(f"{dtype}.from_i32 takes an int, not {type(value).__name__}")
    v = int(value)
    if not -2**31 <= v < 2**31:
        raise ConstantError(f"{dtype}.from_i32({v}): {v} is not an i32")
    if not dtype.min <= v <= dtype.max:
        low = (v - dtype.min) % (1 << dtype.value_bits) + dtype.min
        raise ConstantError(f"{dtype}.from_i32({v}): {dtype} holds {dtype.min} ... {dtype.max} (furiosa-opt "
                            f"would keep the low {dtype.value_bits} bits, {low}; write that if it is meant)")
    return v


def from_bits(dtype: DType, bits: object) -> float:
    """`bf16.from_bits(0x4040)`, `f4e2m1.from_bits(0x5)`: the value of a raw encoding."""
    _offered(dtype, "from_bits")
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise ConstantError(f"{dtype}.from_bits takes an int, not {type(bits).__name__}")
    b, top = int(bits), (1 << dtype.bits) - 1
    if not 0 <= b <= top:
        raise ConstantError(f"{dtype}.from_bits({b:#x}): {a_an(dtype)} encoding is 0 ... {top:#x}")
    if dtype.value == "bf16":
        return float(np.array([b << 16], dtype=np.uint32).view(np.float32)[0])
    return float(float_bits.decode_f4e2m1(np.array([b], dtype=np.uint8)).view(np.float32)[0])
