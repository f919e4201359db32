"""The naive model's Vector Engine: element by element, in plain Python numbers.

Written from the engine's stated semantics, sharing no code with `ir.vector.numerics`:
an i32 stream holds Python ints (wrapped or saturated to 32 bits by hand), an f32 stream
holds bit patterns that are decoded to Python floats one element at a time. The ops the
shipped examples and the generated vector chains use are modelled; any other raises
ModelError, so a new op cannot be checked against a model that silently ignores it.

f32 add, subtract, multiply and divide are computed on Python floats (binary64) and
rounded once to binary32: for these operations that double rounding is exact, as 53 >=
2 * 24 + 2. The fused multiply-add is computed in exact fractions.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from typing import Any

import numpy as np

from tests.differential.naive_layout import ModelError, Value, move

__all__ = ["vector_stage"]

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_PASS_THROUGH = ("vector_init", "vector_final")


def _saturate(x: int) -> int:
    return max(_I32_MIN, min(_I32_MAX, x))


def _wrap(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def _fxp(name: str, a: int, b: int) -> int:
    """One fixed-point op on Python ints."""
    if name == "MUL_FXP":                       # Q31 product, nearest with ties up
        return _saturate(((a * b >> 30) + 1) >> 1)
    if name == "MUL_INT":
        return _wrap(a * b)
    if name == "ADD_FXP":
        return _wrap(a + b)
    if name == "ADD_FXP_SAT":
        return _saturate(a + b)
    if name == "SUB_FXP":
        return _wrap(a - b)
    if name == "SUB_FXP_SAT":
        return _saturate(a - b)
    if name in _SHIFTS:
        return _shift(name, a, b)
    raise ModelError(f"the naive model has no fixed-point op {name}")


_SHIFTS = ("LEFT_SHIFT", "LEFT_SHIFT_SAT", "LOGIC_RIGHT_SHIFT", "ARITH_RIGHT_SHIFT", "ARITH_RIGHT_SHIFT_ROUND")


def _shift(name: str, a: int, b: int) -> int:
    """A shift of a by the low five bits of b (a constant amount is 0 ... 31 anyway)."""
    s = b & 31
    if name == "LEFT_SHIFT":
        return _wrap(a << s)
    if name == "LEFT_SHIFT_SAT":
        return _saturate(a << s)
    if name == "LOGIC_RIGHT_SHIFT":
        return _wrap((a & 0xFFFFFFFF) >> s)
    if name == "ARITH_RIGHT_SHIFT":
        return a >> s
    return a if s == 0 else ((a >> (s - 1)) + 1) >> 1  # half up, as MUL_FXP rounds


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", int(bits) & 0xFFFFFFFF))[0]


def _bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _clip_float(name: str, a: float, b: float) -> float:
    """Max/Min as Rust's f32::max/min: a NaN operand is ignored; +0.0 beats -0.0 for max."""
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    if a == b == 0.0:
        neg = (math.copysign(1.0, a) < 0, math.copysign(1.0, b) < 0)
        both_negative = all(neg) if name == "MAX" else any(neg)
        return -0.0 if both_negative else 0.0
    return max(a, b) if name == "MAX" else min(a, b)


def _elementwise(v: Value, fn: Any) -> Value:
    """`fn` of every element; each distinct value is computed once (padding, clipped and
    requantized streams repeat few values), `fn` being a function of the element alone."""
    values, inverse = np.unique(v.data.reshape(-1), return_inverse=True)
    mapped = np.array([fn(x) for x in values.tolist()], dtype=v.data.dtype)
    return Value(v.dtype, v.levels, mapped[inverse].reshape(v.data.shape), v.spatial)


def _round_f32(x: float) -> int:
    """The bits of the binary32 nearest the binary64 `x` (ties to even, overflow to inf); every
    NaN is the one NaN 0x7FC00000 (docs/numerics.md), not the host's nor an operand's."""
    if math.isnan(x):
        return 0x7FC00000
    with np.errstate(over="ignore"):
        return int(np.array(x, np.float64).astype(np.float32).view(np.uint32))


def _fdiv(a: float, b: float) -> float:
    if b == 0.0 and not math.isnan(a):
        return math.nan if a == 0.0 else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b if b != 0.0 else a


def _fp(name: str, a: float, b: float) -> int:
    """ADD_F / SUB_F / MUL_F / DIV_F (and the f32 clip ADD) on two decoded f32 values."""
    if name in ("ADD_F", "ADD"):
        return _round_f32(a + b)
    if name == "SUB_F":
        return _round_f32(a - b)
    if name.startswith("MUL_F"):
        return _round_f32(a * b)
    if name == "DIV_F":
        return _round_f32(_fdiv(a, b))
    raise ModelError(f"the naive model has no float op {name}")


def _fma(a: float, b: float, c: float) -> int:
    """a * b + c rounded once: exact in fractions when all are finite."""
    if not all(math.isfinite(x) for x in (a, b, c)):
        return _round_f32(a * b + c)  # infinities and NaNs: no rounding question
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return _round_f32(a * b + c)  # the sign of an exact zero, as IEEE gives it
    guess = _round_f32(float(exact))  # float() rounds once to binary64; a second rounding may be off by one
    if (guess & 0x7F800000) == 0x7F800000:
        return guess
    near = [b for b in (guess - 1, guess, guess + 1)  # same sign, finite: bit order is magnitude order
            if 0 <= b < 1 << 32 and not (b ^ guess) >> 31 and (b & 0x7F800000) != 0x7F800000]
    return min(near, key=lambda b: (abs(Fraction(_f32(b)) - exact), b & 1))  # nearest, ties to even


def _abs_pick(smaller: bool, a: Any, b: Any) -> Any:
    wa, wb = abs(a), abs(b)
    return a if (wa < wb if smaller else wa > wb) else b


def _clip_i32(name: str, a: int, b: int) -> int:
    table = {"MAX": max, "MIN": min, "ADD_FXP": lambda x, y: _wrap(x + y), "ADD_FXP_SAT": lambda x, y: _saturate(x + y),
             "ABS_MIN": lambda x, y: _abs_pick(True, x, y), "ABS_MAX": lambda x, y: _abs_pick(False, x, y)}
    return table[name](a, b)


def _clip_f32(name: str, a: float, b: float) -> int:
    if name in ("MAX", "MIN"):
        return _bits(_clip_float(name, a, b))
    if name == "ADD":
        return _fp("ADD", a, b)
    if math.isnan(a) or math.isnan(b):
        return _bits(b)  # the comparison is false: b
    return _bits(_abs_pick(name == "ABS_MIN", a, b))


def _logic(name: str, a: int, b: int, is_f32: bool) -> int:
    """Bitwise ops on 32-bit patterns (f32 stored as unsigned bits, i32 as signed ints)."""
    if name in _SHIFTS:
        return _shift(name, a, b)
    ua, ub = a & 0xFFFFFFFF, b & 0xFFFFFFFF
    r = {"BIT_AND": ua & ub, "BIT_OR": ua | ub, "BIT_XOR": ua ^ ub}[name]
    return r if is_f32 else _wrap(r)


def _pick(mode: Any, count: int) -> str:
    """The argument digits of `mode` (MODE01 / MODE012 when None)."""
    return (mode.name[4:] if mode is not None else "012"[:count])


def _binary(v: Value, op: Any, fn: Any, const: Any, decode: Any = int) -> Value:
    """fn on the arguments the mode picks: 0 an element (decoded), 1 the constant (decoded)."""
    digits = _pick(op.mode, 2)
    if digits == "01":
        return _elementwise(v, lambda x: fn(decode(x), const))
    return _elementwise(v, lambda x: fn(*[decode(x) if d == "0" else const for d in digits]))


def _fxp_to_fp(x: int, w: int) -> int:
    return _round_f32(x * 2.0 ** (w - 31))


def _fp_to_fxp(bits: int, w: int) -> int:
    x = _f32(bits)
    if math.isnan(x):
        return _I32_MIN if bits >> 31 else _I32_MAX
    if math.isinf(x):
        return _I32_MIN if x < 0 else _I32_MAX
    v = x * 2.0 ** (31 - w)
    r = math.floor(abs(v) + 0.5)
    return _saturate(int(math.copysign(r, v)) if r else 0)


def _more(name: str, op: Any, v: Value) -> Value | None:
    """The stages of the generated chains beyond the examples' (None: not one of them)."""
    f32 = v.dtype == "f32"
    if name == "vector_logic":
        c = _bits(float(np.float32(op.const))) if f32 else int(op.const)
        return _binary(v, op, lambda a, b: _logic(op.op.name, a, b, f32), c)
    if name == "vector_fp_binary" or name == "vector_fp_div":
        c = _f32(_bits(float(np.float32(op.const))))
        return _binary(v, op, lambda a, b: _fp(op.op.name, a, b), c, _f32)
    if name == "vector_fp_ternary":
        consts = {"1": float(np.float32(op.const)), "2": float(np.float32(op.const1))}
        digits = _pick(op.mode, 3)
        return _elementwise(v, lambda x: _fma(*[_f32(x) if d == "0" else consts[d] for d in digits]))
    if name == "vector_fxp_to_fp":
        return _retyped(_elementwise(_wide(v), lambda x: _fxp_to_fp(int(x), int(op.int_width))), "f32")
    if name == "vector_fp_to_fxp":
        return _retyped(_elementwise(_wide(v), lambda x: _fp_to_fxp(int(x), int(op.int_width))), "i32")
    if name == "vector_reinterpret":
        to = op.scalar_to
        fn = (lambda x: int(x) & 0xFFFFFFFF) if to == "f32" else (lambda x: _wrap(int(x)))
        return _retyped(_elementwise(_wide(v), fn), to)
    if name in ("vector_narrow_trim", "vector_widen_pad"):
        return move(v, v.levels[:3] + (v.levels[3], op.packet), 3, True)
    if name in ("vector_narrow_split", "vector_widen_concat"):
        return move(v, v.levels[:3] + (op.time, op.packet), 3, True)
    return None


def _retyped(v: Value, dtype: str) -> Value:
    """`v` (computed into int64) stored as `dtype` is: i32 values as int64, f32 bits as uint32."""
    return Value(dtype, v.levels, v.data.astype(np.uint32 if dtype == "f32" else np.int64), v.spatial)


def _wide(v: Value) -> Value:
    return Value(v.dtype, v.levels, v.data.astype(np.int64), v.spatial)


def _with_rf(v: Value, rf: np.ndarray, fn: Any) -> Value:
    flat = [fn(x, y) for x, y in zip(v.data.reshape(-1).tolist(), rf.reshape(-1).tolist())]
    return Value(v.dtype, v.levels, np.array(flat, dtype=v.data.dtype).reshape(v.data.shape), v.spatial)


def _rf_stage(name: str, op: Any, v: Value, rf: np.ndarray) -> Value:
    """A binary op reading a VRF operand (already moved to the stream's layout)."""
    if name == "vector_clip" and v.dtype == "f32" and op.op.name == "ADD":
        return _with_rf(v, rf, lambda x, y: _round_f32(_f32(x) + _f32(y)))
    if name == "vector_fxp" and v.dtype == "i32":
        return _with_rf(v, rf, lambda x, y: _fxp(op.op.name, int(x), int(y)))
    raise ModelError(f"the naive model has no VRF form of {name} {op.op.name}")


def vector_stage(name: str, op: Any, v: Value, rf: np.ndarray | None = None) -> Value:
    """The value after one Vector Engine stage `name` (a traced op's STAGE); `rf` is the
    VRF operand laid out as the stream, for an op that reads one."""
    if rf is not None:
        return _rf_stage(name, op, v, rf)
    if name in _PASS_THROUGH:
        return v
    if name == "vector_intra_slice_tag":
        if op.mode.name != "ZERO":
            raise ModelError(f"the naive model has no tag mode {op.mode.name}")
        return v
    if name == "vector_fxp":
        return _binary(v, op, lambda a, b: _fxp(op.op.name, a, b), int(op.const))
    if name == "vector_clip" and v.dtype == "i32":
        return _binary(v, op, lambda a, b: _clip_i32(op.op.name, a, b), int(op.const))
    if name == "vector_clip" and v.dtype == "f32":
        c = _f32(_bits(float(np.float32(op.const))))
        return _binary(v, op, lambda a, b: _clip_f32(op.op.name, a, b), c, _f32)
    out = _more(name, op, v)
    if out is not None:
        return out
    raise ModelError(f"the naive model has no semantics for {name} on {v.dtype}")
