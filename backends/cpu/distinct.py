"""Sorted distinct values of an array, as `np.unique(a)` gives them.

numpy 2's `np.unique` without `return_index` / `return_inverse` / `return_counts` (and
`np.union1d`, which calls it) asks `np.ma.is_masked` first: the first such call in a
process imports `numpy.ma`, ~30 ms of CPU, a fifth of a small kernel's first run on the
cpu backend (issue 61, the first call). The backend's own callers use `distinct_values` instead.
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct_values"]


def distinct_values(a: np.ndarray) -> np.ndarray:
    """The distinct values of `a` (flattened), ascending."""
    s = np.sort(np.asarray(a).reshape(-1))
    if s.size < 2:
        return s
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]
