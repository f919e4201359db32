"""The Float cluster's unary ops that the shared numerics evaluate in float64 and round once
to f32 (`ir.vector.numerics.transcendental`: exp, log, tanh, sin, cos), without fresh
float64 arrays.

The numerics widen the f32 values to a new float64 array, apply the ufunc into another and
round that to f32. Two float64 arrays of a large stream are big enough that the C allocator
maps them afresh and gives them back at every step, and the page faults of filling them
cost several times the arithmetic (issue 29: about 0.45 ms of a 1024-row softmax pass's
0.6 ms exp). `via_f64` computes the same values (the same exact widening, the same ufunc on
contiguous float64 values, the same rounding and NaN canonicalisation) in two float64
buffers each thread keeps for its next step: a shortcut (hook "fp_unary" of
visa/interp/shortcuts.py, so the switch turns it off with the others).
"""

from __future__ import annotations

import threading

import numpy as np

from ir.vector.numerics._arrays import canonical_nan
from visa.interp.shortcuts import register

__all__ = ["VIA_F64", "via_f64"]

VIA_F64 = {"EXP": np.exp, "LOG": np.log, "TANH": np.tanh, "SIN": np.sin, "COS": np.cos}
_KEEP = 1 << 21  # the largest buffers kept (elements; 16 MiB each), larger ones are fresh
_LOCAL = threading.local()


def _buffers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two float64 arrays of `n` elements: this thread's kept buffers when they are large enough."""
    kept = getattr(_LOCAL, "buffers", None)
    if kept is None or kept[0].size < n:
        kept = (np.empty(n, np.float64), np.empty(n, np.float64))
        if n <= _KEEP:
            _LOCAL.buffers = kept
    return kept[0][:n], kept[1][:n]


@register("fp_unary")
def via_f64(op: str, values: np.ndarray) -> np.ndarray | None:
    """FP_UNARY op `op` on stored f32 values (uint32 bits) as the shared numerics compute it,
    a new array of the same shape; None when `op` is not computed in float64 or the values
    are not f32 (the general path then runs, or refuses, the step)."""
    fn = VIA_F64.get(op)
    if fn is None or values.dtype != np.uint32:
        return None
    x = values.view(np.float32)
    wide, result = _buffers(x.size)
    out = np.empty(x.shape, np.float32)
    with np.errstate(all="ignore"):
        np.copyto(wide.reshape(x.shape), x)  # exact
        fn(wide, out=result)
        np.copyto(out, result.reshape(x.shape), casting="same_kind")  # rounded as astype(float32) rounds
    return canonical_nan(out).view(np.uint32)
