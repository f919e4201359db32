"""An exact integer sum of products as one batched BLAS matmul (shared by the backends
and the VISA interpreter; it knows nothing of either).

`exact_sum(a, b, keep, ftype)` is `np.einsum` of two broadcast-compatible integer arrays
of the same rank, summing every axis not in `keep`: for the Contraction Engine's i32 sums
the order of a sum does not matter, so when every partial sum is an integer that `ftype`
holds exactly (the caller bounds it: terms x max|a| x max|b| below 2^24 for float32,
2^53 for float64), a float matmul computes it exactly, and far faster than an integer
einsum. The axes are sorted by which operand varies along them: both and kept (batch),
one and kept (rows of the matmul, or its columns), both and summed (the matmul's inner
dimension); a summed axis only one operand varies along is summed in int64 first.
A caller may pass `alloc(shape, dtype)` to supply the (uninitialised) arrays the operands
are staged in and the sums are written to, e.g. from a pool of its own (a fresh large
array costs a page fault per page on first touch), and `as_float=True` to take the sums
as the `ftype` matmul's own result (the same integers, held exactly), which saves the
int64 copy when the caller converts them anyway.

The right operand is staged as (batch, columns, inner), rows of the inner dimension
contiguous as the operands usually hold them (a cheap copy), and multiplied transposed
(BLAS reads it so at no cost). With one batch axis the batches go `CHUNK` staged elements
at a time, staged and multiplied while they are in cache (many small matmuls, one per
slice of a kernel whose slices each hold their own problem, would otherwise stage every
operand in memory first and read it back). Integer sums held exactly do not depend on
the order of their terms: the result is the same whatever the blocking.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["CHUNK", "SPLIT_MIN", "exact_sum"]

CHUNK = 1 << 19
"""Operand elements staged per block of batches (2 MiB of float32: in a core's cache)."""


def _presum(x: np.ndarray, axes: list[int]) -> np.ndarray:
    """`x` summed (exactly, in int64) over `axes`, keeping them as size 1."""
    if not axes:
        return x
    return x.sum(axis=tuple(axes), keepdims=True, dtype=np.int64)


def _staged(x: np.ndarray, buf: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`x` converted into the front of the flat buffer `buf`, as an array of `shape` (same
    element order)."""
    out = buf[:x.size].reshape(x.shape)
    np.copyto(out, x, casting="unsafe")
    return out.reshape(shape)


def _widened(f: np.ndarray, alloc: Callable[..., np.ndarray]) -> np.ndarray:
    """The integer-valued floats `f` as int64, in an array from `alloc`."""
    y = alloc(f.shape, np.int64)
    np.copyto(y, f, casting="unsafe")
    return y


SPLIT_MIN = 1 << 24
"""Products of one unbatched matmul above which `parallel` (when given) gets its row halves."""


def exact_sum(a: np.ndarray, b: np.ndarray, keep: Sequence[int], ftype,
              alloc: Callable[..., np.ndarray] | None = None, as_float: bool = False,
              parallel: Callable[[list[Callable[[], object]]], None] | None = None) -> np.ndarray:
    """einsum(a, b) -> int64 (`ftype` when `as_float`) with the axes `keep` (ascending)
    kept, every other summed; size-1 axes broadcast as in einsum. Exact when `ftype`
    holds every partial sum. `parallel(tasks)`, when given, runs the halves of the rows of
    one large unbatched matmul at once (on threads of the caller's; each writes its own
    rows of the result, so the sums are the same)."""
    if a.ndim != b.ndim:
        raise ValueError("exact_sum: the operands differ in rank")
    nd, kept = a.ndim, set(keep)
    shape = np.broadcast_shapes(a.shape, b.shape)
    only_a = [k for k in range(nd) if k not in kept and a.shape[k] > 1 and b.shape[k] == 1]
    only_b = [k for k in range(nd) if k not in kept and b.shape[k] > 1 and a.shape[k] == 1]
    a, b = _presum(a, only_a), _presum(b, only_b)
    batch = [k for k in keep if a.shape[k] > 1 and b.shape[k] > 1]
    left = [k for k in keep if a.shape[k] > 1 and b.shape[k] == 1]
    right = [k for k in keep if b.shape[k] > 1 and a.shape[k] == 1]
    red = [k for k in range(nd) if k not in kept and a.shape[k] > 1 and b.shape[k] > 1]
    rest_a = [k for k in range(nd) if k not in batch + left + red]
    rest_b = [k for k in range(nd) if k not in batch + right + red]
    nb, ni, nj, nr = (math.prod(shape[k] for k in ks) for ks in (batch, left, right, red))
    xa = a.transpose(batch + left + red + rest_a)
    xb = b.transpose(batch + right + red + rest_b)
    step = max(1, min(nb, CHUNK // max(1, (ni + nj) * nr))) if len(batch) == 1 else nb
    make = np.empty if alloc is None else alloc
    buf_a, buf_b, y = make((step * ni * nr,), ftype), make((step * nj * nr,), ftype), make((nb, ni, nj), ftype)
    for lo in range(0, nb, step):
        n = min(nb - lo, step)
        part_a, part_b = (xa, xb) if n == nb else (xa[lo:lo + n], xb[lo:lo + n])
        am = _staged(part_a, buf_a, (n, ni, nr))
        bm = _staged(part_b, buf_b, (n, nj, nr))
        if parallel is not None and n == 1 and ni >= 2 and ni * nj * nr >= SPLIT_MIN:
            half = ni // 2
            parallel([lambda r0=r0, r1=r1: np.matmul(am[:, r0:r1], bm.transpose(0, 2, 1), out=y[lo:lo + 1, r0:r1])
                      for r0, r1 in ((0, half), (half, ni))])
        else:
            np.matmul(am, bm.transpose(0, 2, 1), out=y[lo:lo + n])
    if not as_float:
        y = y.astype(np.int64) if alloc is None else _widened(y, alloc)
    grouped = [shape[k] for k in batch + left + right]
    y = y.reshape(grouped) if grouped else y.reshape(())
    order = batch + left + right
    y = y.transpose([order.index(k) for k in sorted(order)])
    return y.reshape([shape[k] if k in order else 1 for k in keep])
