"""The intra-slice reduce and inter-slice reduce operators (folded by `ir.vector.numerics.fold`).

A reduction folds the reduced elements left to right, starting from the op's identity:
acc = identity; for each element v in order: acc = op(acc, v). The order matters for
the saturating add (MAX + 1 - 1 is MAX - 1, not MAX) and for f32 adds and products; it
is the order of the reduced axis as given (the DSL hands the elements over in the
reference's order). Operators: `Add` (i32: wrapping; f32: IEEE add), `AddSat`
(saturating), `Max` / `Min` (i32 order; f32 as the clip `Max` / `Min`: NaN ignored,
+0.0 above -0.0), f32 `Mul`. Identities: 0 / +0.0 for the adds, the i32 extremes or
-inf / +inf for max / min, 1.0 for mul. So an f32 `Add` of only -0.0 gives +0.0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ir.vector.numerics.clip_logic import max_f32, max_i32, min_f32, min_i32
from ir.vector.numerics.fp import add_f, mul_f
from ir.vector.numerics.fxp import add_fxp, add_fxp_sat

__all__ = ["REDUCE_I32", "REDUCE_F32"]

# op name -> (binary operator, identity)
REDUCE_I32: dict[str, tuple[Callable[[Any, Any], np.ndarray], int]] = {
    "ADD": (add_fxp, 0), "ADD_SAT": (add_fxp_sat, 0),
    "MAX": (max_i32, -(2**31)), "MIN": (min_i32, 2**31 - 1),
}
REDUCE_F32: dict[str, tuple[Callable[[Any, Any], np.ndarray], float]] = {
    "ADD": (add_f, 0.0), "MAX": (max_f32, -np.inf), "MIN": (min_f32, np.inf), "MUL": (mul_f, 1.0),
}

