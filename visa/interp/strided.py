"""Fast paths for affine walks: a loop nest of addresses read or written as a strided view.

A walk `base + sum(i_k * stride_k)` over a byte memory is the same set of accesses as a
numpy view with those strides, so when every address is in bounds the interpreter copies
through views instead of building index arrays (same bytes, far less memory traffic).
DM addresses `slice * DM_SLICE_BYTES + offset` map to the stored `(slices, cap)` array
affinely when each stride either steps whole slices or stays inside one slice. Anything
else (negative strides, out-of-range walks, overlapping destinations) returns None and
the caller takes the index-array path, which reports the fault.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from visa.interp.dm import Dm

__all__ = ["flat_walk", "view", "injective", "view_reshape", "runs_as_items"]


def flat_walk(space: Any, base: int, sizes: Sequence[int], strides: Sequence[int],
              width: int) -> tuple[np.ndarray, int, list[int]] | None:
    """(byte array, start, byte strides) of a walk of `width`-byte accesses, or None when it
    is not an in-bounds affine walk with non-negative strides."""
    # one pass over the loops (a DMA of many small commands calls this per command)
    if base < 0:
        return None
    if not isinstance(space, Dm):
        span = 0
        for n, s in zip(sizes, strides):
            if s < 0 or n < 1:
                return None
            span += (n - 1) * s
        data = space if isinstance(space, np.ndarray) else space.data
        if base + span + width > data.size:
            return None
        return data.reshape(-1), base, list(strides)
    sb = space.slice_bytes
    first, off = divmod(base, sb)
    inner, last, whole = 0, first, []
    for n, s in zip(sizes, strides):
        if s < 0 or n < 1:
            return None
        k, r = divmod(s, sb)
        if r:
            inner += (n - 1) * s
        else:
            last += (n - 1) * k
        whole.append(None if r else k)
    if off + inner + width > sb or last >= space.slices:
        return None
    end = off + inner + width     # the slices it steps through only when a lazy region meets its offsets
    space._grow(end, last + 1, off, _slices(first, sizes, whole) if space.lazy and space.meets(off, end) else None)
    cap = space.data.shape[1]
    flat = [s if k is None else k * cap for s, k in zip(strides, whole)]
    return space.data.reshape(-1), first * cap + off, flat


def _slices(first: int, sizes: Sequence[int], whole: list[int | None]) -> np.ndarray:
    """The slices a DM walk touches: `first` plus every point of its slice-stepping loops
    (`whole`: a loop's stride in slices, None for a loop inside one slice)."""
    at = np.array([first], np.int64)
    for n, k in zip(sizes, whole):
        if k and n > 1:
            at = (at[:, None] + np.arange(n, dtype=np.int64) * k).reshape(-1)
    return at


def view(walk: tuple[np.ndarray, int, list[int]], sizes: Sequence[int], dtype: np.dtype) -> np.ndarray | None:
    """The strided view of a flat walk with elements of `dtype` (None when misaligned)."""
    data, start, strides = walk
    w = np.dtype(dtype).itemsize
    if w > 1 and (start % w or any(s % w for s in strides) or data.size % w):
        return None
    if not data.flags.c_contiguous:    # (a strided 1-D HBM view: no buffer to build on)
        return as_strided(data.view(dtype)[start // w:], shape=tuple(sizes), strides=tuple(strides), writeable=True)
    # the array constructor over the flat store (one C call; `as_strided` goes through an
    # array interface object, ~6x the time, which a DMA of many small commands pays per command)
    return np.ndarray(tuple(sizes), dtype, buffer=data, offset=start, strides=tuple(strides))


def injective(sizes: Sequence[int], strides: Sequence[int], width: int) -> bool:
    """Does the walk touch every byte at most once (so a write through its view is well
    defined)? Sufficient test: sorted by stride, each step clears the span of the inner ones."""
    span = width
    for s, n in sorted((s, n) for n, s in zip(sizes, strides) if n > 1):
        if s < span:
            return False
        span = s * (n - 1) + span
    return True


def view_reshape(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """`a.reshape(shape)` when it is a view of `a`; None when it would copy."""
    try:
        return np.reshape(a, shape, copy=False)
    except TypeError:       # numpy < 2.1 has no `copy=`: a view's shape can be set only when no copy is needed
        v = a.view()
        try:
            v.shape = shape
        except AttributeError:
            return None
        return v
    except ValueError:
        return None


def runs_as_items(dst: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dst, src), arrays of one shape and dtype whose last axis is contiguous in both and at
    least 8 bytes long, viewed with that axis as one raw item each (numpy then moves a run
    at a time: a strided copy of 8-cell bf16 packets ~6x faster than cell by cell); else
    unchanged. Copying the views copies the same bytes."""
    item = dst.itemsize
    run = dst.shape[-1] * item if dst.ndim > 1 else 0
    if (run < 8 or dst.shape != src.shape or dst.dtype != src.dtype or dst.dtype.hasobject
            or dst.strides[-1] != item or src.strides[-1] != item):
        return dst, src
    return dst.view(f"V{run}")[..., 0], src.view(f"V{run}")[..., 0]
