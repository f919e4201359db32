"""The integer contraction's row de-duplication (a speed shortcut, `visa.interp.fast.speed`).

When the slices of a contraction hold copies of the same tiles (a DMA broadcast makes them),
the stream's values vary along one factor of the rows and the weights' along the other;
`split` finds such a grid, and `visa.interp.contract` then multiplies the distinct rows
once instead of every row. The plain path computes every row.
"""

from __future__ import annotations

import numpy as np

__all__ = ["split"]


def _words(v: np.ndarray) -> np.ndarray:
    """`v` (outer, inner, ...) of integers as (outer, inner, n) of the widest unsigned words
    its trailing bytes split into (equal words are equal values: fewer, wider compares)."""
    if not v.flags.c_contiguous:     # a strided view (the TRF or DM bytes of the rows): its rows' words
        whole = v.ndim and v.strides[-1] == v.itemsize and v.shape[-1] * v.itemsize % 8 == 0
        return v.view(np.uint64) if whole and v.itemsize <= 8 else v
    flat = v.reshape(v.shape[0], v.shape[1], -1)
    nbytes = flat.shape[2] * flat.itemsize
    if not nbytes:
        return flat
    width = next(w for w in (8, 4, 2, 1) if nbytes % w == 0)
    return flat.view(f"u{width}")


def _constant_along(v: np.ndarray, axis: int) -> bool:
    """Does `v` (outer, inner, ...) hold the same values all along `axis` (0 or 1)? One far
    pair first, which rejects most candidates at once."""
    v = _words(v)
    first = v[:, :1] if axis == 1 else v[:1]
    far = v[:1, -1:] if axis == 1 else v[-1:, :1]
    return bool(np.array_equal(far, first[:1, :1]) and (v == first).all())


def split(sa: np.ndarray, wa: np.ndarray) -> tuple[int, int, bool] | None:
    """(outer, inner, stream_outer): a split of the rows into an outer x inner grid along
    which the stream's values vary with one factor only and the weights' with the other
    (slices holding copies of the same tiles, as a DMA broadcast makes them), so the sums of
    every row are one matmul of the distinct operand rows; None when no split fits."""
    rows = sa.shape[0]
    if wa.shape[0] != rows:
        return None
    for inner in range(rows // 2, 1, -1):
        if rows % inner:
            continue
        vs, vw = sa.reshape(rows // inner, inner, *sa.shape[1:]), wa.reshape(rows // inner, inner, *wa.shape[1:])
        for s_axis, stream_outer in ((1, True), (0, False)):
            if _constant_along(vs, s_axis) and _constant_along(vw, 1 - s_axis):
                return rows // inner, inner, stream_outer
    return None
