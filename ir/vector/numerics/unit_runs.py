"""The numerics each Vector Engine unit declares (`ir.vector.units`), on stored values
(i32 as int32, f32 as uint32 bit patterns).

An element-wise unit names `fn`, its op name -> the function on the scalar's arrays
(int32, or float32 for f32); `run_elementwise` applies it under the step's argument mode to
the stream and its constant(s) or register-file operand. A unit that moves or rereads
cells (the tag, the way changes, the conversions, the reinterpret) names a whole-step
`run(op, arg, values, mode, arg1)` of this module.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.vector.numerics.clip_logic import CLIP_F32_OPS, CLIP_I32_OPS, LOGIC_F32_OPS, LOGIC_I32_OPS
from ir.vector.numerics.conversions import fp_to_fxp, fxp_to_fp
from ir.vector.numerics.fp import FP_BINARY_OPS, div_f, fma_f
from ir.vector.numerics.fxp import FXP_OPS
from ir.vector.numerics.modes import apply_mode
from ir.vector.numerics.transcendental import FP_UNARY_OPS

__all__ = ["run_elementwise", "ops_named", "fxp_fn", "clip_i32_fn", "clip_f32_fn", "logic_i32_fn",
           "logic_f32_fn", "fp_unary_fn", "fp_binary_fn", "fp_ternary_fn", "fp_div_fn", "run_same", "run_trim",
           "run_split", "run_concat", "run_reinterpret", "run_fxp_to_fp", "run_fp_to_fxp"]


def ops_named(table: dict[str, Any]) -> Any:
    """A unit's `fn`: op name -> its function in `table` (KeyError for another name)."""
    return lambda op: table[op]


fxp_fn, clip_i32_fn, clip_f32_fn = ops_named(FXP_OPS), ops_named(CLIP_I32_OPS), ops_named(CLIP_F32_OPS)
logic_i32_fn, logic_f32_fn = ops_named(LOGIC_I32_OPS), ops_named(LOGIC_F32_OPS)
fp_unary_fn = ops_named(FP_UNARY_OPS)
fp_ternary_fn, fp_div_fn = ops_named({"FMA_F": fma_f}), ops_named({"DIV_F": div_f})


def fp_binary_fn(op: str) -> Any:
    """A multiply names its ALU (`MUL_F_MUL0`); every ALU computes the same product."""
    return FP_BINARY_OPS["MUL_F" if op.startswith("MUL_F") else op]


def run_elementwise(fn: Any, arity: int, scalar: str, values: np.ndarray, mode: Any,
                    operands: tuple[Any, ...]) -> np.ndarray:
    """`fn` on the stream and `operands` (arity - 1 constants as stored ints, or one
    register-file array of stored values) under `mode` (None: MODE01 / MODE012)."""
    if scalar == "f32":
        x = values.view(np.float32)
        args = [o.view(np.float32) if isinstance(o, np.ndarray) else np.array(o, np.uint32).view(np.float32)
                for o in operands]
    else:
        x, args = values, [o if isinstance(o, np.ndarray) else np.int32(o) for o in operands]
    out = fn(x) if arity == 1 else apply_mode(fn, mode, x, *args)
    return np.asarray(out, np.float32).view(np.uint32) if scalar == "f32" else np.asarray(out, np.int32)


def run_same(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    """The values as they are (the tag ZERO, the pad: the engine's values do not change)."""
    return values


def run_trim(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    """The back four cells (the trimmed lanes) zeroed."""
    out = np.array(values, copy=True)
    out[..., 4:] = 0
    return out


def run_fxp_to_fp(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    return fxp_to_fp(values, arg).view(np.uint32)


def run_fp_to_fxp(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    return fp_to_fxp(values.view(np.float32), arg)


def run_reinterpret(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    return np.ascontiguousarray(values).view({"TO_I32": np.int32, "TO_F32": np.uint32}[op])


def run_split(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    """(..., T, 8) -> (..., 2T, 8): flit t's front four at step 2t, its back four at 2t + 1."""
    halves = values.reshape(*values.shape[:-2], values.shape[-2] * 2, 4)
    out = np.zeros((*halves.shape[:-1], 8), values.dtype)
    out[..., :4] = halves
    return out


def run_concat(op: str, arg: int, values: np.ndarray, mode: Any, arg1: int) -> np.ndarray:
    """(..., T, 8) with T even -> (..., T / 2, 8): the front fours of steps 2t and 2t + 1 rejoined."""
    if values.shape[-2] % 2:
        raise ValueError(f"a concat joins pairs of time steps, not {values.shape[-2]}")
    front = np.ascontiguousarray(values[..., :4])
    return front.reshape(*values.shape[:-2], values.shape[-2] // 2, 8)
