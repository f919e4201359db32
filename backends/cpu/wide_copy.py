"""Strided copies of short runs of cells, as copies of wider words.

numpy copies a strided array one inner loop per run of its last axis; when that axis is a
run of a few contiguous cells in both source and destination (4 bf16 cells of a Transpose
Engine packet, 8 f32 cells of a tile's row), each call moves a handful of bytes and the
copy costs its loop calls, not its bytes. Viewing each run as one or a few unsigned words
(up to 8 bytes) copies the same bytes in a fraction of the time (issue 61: committing
`drawn_s101_2`'s turned operand, 1.4 -> 0.3 ms)."""

from __future__ import annotations

import numpy as np

__all__ = ["wide_runs"]


_WORDS = (8, 4, 2)
"""The word sizes in bytes `wide_runs` copies a run of cells as, widest first."""


def wide_runs(dst: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dst, src) of the same shape and dtype, their last axis contiguous in both, viewed so
    that each run of the last axis is copied as one item: a run longer than 8 bytes as one
    raw item of its bytes (`V{bytes}`, which needs no alignment), a shorter one as the
    widest unsigned word (up to 8 bytes) that divides the run's bytes and every address and
    stride of both; unchanged when there is no such wider item. Copying the views copies the
    same bytes: numpy's copy goes one inner loop per run, so runs of 4 bf16 cells (a
    Transpose Engine result committed back, issue 61) copy ~10x faster as one 8-byte word
    each, and 16-byte runs (a cast's padded packets) ~2x faster as one item than as two words."""
    if dst.dtype != src.dtype or dst.shape != src.shape or dst.ndim == 0 or dst.size == 0 \
            or dst.dtype.hasobject:
        return dst, src
    item = dst.itemsize
    if dst.strides[-1] != item or src.strides[-1] != item:
        return dst, src
    run = dst.shape[-1] * item
    if run > _WORDS[0]:  # one raw item a run, the axis dropped (the copy's inner loop over the next one)
        return dst.view(f"V{run}")[..., 0], src.view(f"V{run}")[..., 0]
    for word in _WORDS:
        if word <= item:
            break
        if run % word or any(v % word for a in (dst, src)
                             for v in (a.__array_interface__["data"][0], *a.strides[:-1])):
            continue
        wide_dst, wide_src = dst.view(f"u{word}"), src.view(f"u{word}")
        if run == word:  # one word a run: the axis dropped (the copy's inner loop over the next one)
            wide_dst, wide_src = wide_dst[..., 0], wide_src[..., 0]
        return wide_dst, wide_src
    return dst, src
