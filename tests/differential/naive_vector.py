"""The naive model's Vector Engine: element by element, in plain Python numbers.

Written from the engine's stated semantics, sharing no code with `ir.vector.numerics`:
an i32 stream holds Python ints (wrapped or saturated to 32 bits by hand), an f32 stream
holds bit patterns that are decoded to Python floats one element at a time. Only the ops
the shipped examples use are modelled; any other raises ModelError, so a new op cannot be
checked against a model that silently ignores it.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from tests.differential.naive_layout import ModelError, Value

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
    raise ModelError(f"the naive model has no fixed-point op {name}")


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
    flat = [fn(x) for x in v.data.reshape(-1).tolist()]
    data = np.array(flat, dtype=v.data.dtype).reshape(v.data.shape)
    return Value(v.dtype, v.levels, data, v.spatial)


def _with_rf(v: Value, rf: np.ndarray, fn: Any) -> Value:
    flat = [fn(x, y) for x, y in zip(v.data.reshape(-1).tolist(), rf.reshape(-1).tolist())]
    return Value(v.dtype, v.levels, np.array(flat, dtype=v.data.dtype).reshape(v.data.shape), v.spatial)


def _rf_stage(name: str, op: Any, v: Value, rf: np.ndarray) -> Value:
    """A binary op reading a VRF operand (already moved to the stream's layout)."""
    if name == "vector_clip" and v.dtype == "f32" and op.op.name == "ADD":
        return _with_rf(v, rf, lambda x, y: _bits(float(np.float32(_f32(x) + _f32(y)))))
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
        c = int(op.const)
        return _elementwise(v, lambda x: _fxp(op.op.name, int(x), c))
    if name == "vector_clip" and v.dtype == "i32":
        pick = max if op.op.name == "MAX" else min
        if op.op.name not in ("MAX", "MIN"):
            raise ModelError(f"the naive model has no i32 clip {op.op.name}")
        return _elementwise(v, lambda x: pick(int(x), int(op.const)))
    if name == "vector_clip" and v.dtype == "f32":
        if op.op.name not in ("MAX", "MIN"):
            raise ModelError(f"the naive model has no f32 clip {op.op.name}")
        c = float(np.float32(op.const))
        return _elementwise(v, lambda x: _bits(_clip_float(op.op.name, _f32(x), c)))
    raise ModelError(f"the naive model has no semantics for {name} on {v.dtype}")
