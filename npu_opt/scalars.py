"""Trace-time numbers: a numpy or ml_dtypes scalar is the Python number it holds.

Every value a kernel computes while it is traced is a constant, so `np.float32(1.5)`,
`ml_dtypes.bfloat16(1.0)` (the Python spelling of the reference's
`const { bf16::from_f32(1.0) }`) and the `np.int64` a loop over `np.arange` yields are
as good as the literals `1.5`, `1.0` and `3`. `plain_number` turns them into those
literals at the DSL boundary, so the rules and the IR only ever see Python numbers.
Booleans stay booleans (they are not numbers to a rule), and anything else is
returned unchanged for its rule to refuse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["plain_number"]


def plain_number(value: Any) -> Any:
    """`value` as a Python int or float when it is a numpy / ml_dtypes number scalar."""
    if getattr(value, "RUNTIME_SCALAR", False):  # a runtime scalar: RUNTIME-2 (docs/runtime.md)
        return value._no_number()
    if not isinstance(value, np.generic) or isinstance(value, np.bool_):
        return value
    dtype = value.dtype
    if np.issubdtype(dtype, np.integer):
        return int(value)
    if np.issubdtype(dtype, np.floating):
        return float(value)
    if dtype.kind != "V":      # complex, datetime, strings: not a number a rule takes
        return value
    import ml_dtypes  # late: an ml_dtypes scalar means it is loaded; `check` must not load it (test_startup)

    for info, cast in ((ml_dtypes.finfo, float), (ml_dtypes.iinfo, int)):
        try:
            info(dtype)
        except (TypeError, ValueError):
            continue
        return cast(value)
    return value
