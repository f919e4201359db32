"""The cpu backend's worker threads: one pool per thread count, and copies split among them.

The float contraction, a large integer matmul's rows (while BLAS runs on one thread) and a
large DMA copy share these pools; their size is `CpuOptions.threads`. numpy releases the
GIL while it copies, so two threads copying halves of a large buffer take about half the
time of one: the 8 MiB DMAs of a batched bf16 GEMM went from 0.6 to 0.3 ms each (issue 38
item 3).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["pool", "copy_into", "SPLIT_COPY_MIN"]

SPLIT_COPY_MIN = 1 << 21
"""Bytes from which a copy is shared among the threads."""

_POOLS: dict[int, ThreadPoolExecutor] = {}


def pool(threads: int) -> ThreadPoolExecutor:
    """One pool per thread count, made on first use and reused by every later call."""
    found = _POOLS.get(threads)
    if found is None:  # runs on two threads at once keep one pool (setdefault is atomic)
        found = _POOLS.setdefault(threads, ThreadPoolExecutor(max_workers=threads,
                                                                thread_name_prefix="npu-opt-contract"))
    return found


def copy_into(dst: np.ndarray, src: np.ndarray, threads: int = 1) -> None:
    """`np.copyto(dst, src)` (same shapes), the outermost axis longer than one cut into
    `threads` parts copied at once when the copy is large; the same bytes either way."""
    axis = next((k for k, n in enumerate(dst.shape) if n > 1), None)
    if threads <= 1 or axis is None or dst.nbytes < SPLIT_COPY_MIN:
        np.copyto(dst, src)
        return
    parts = min(threads, dst.shape[axis])
    cuts = [dst.shape[axis] * k // parts for k in range(parts + 1)]
    lead = (slice(None),) * axis
    views = [(dst[(*lead, slice(a, b))], src[(*lead, slice(a, b))]) for a, b in zip(cuts, cuts[1:])]
    others = [pool(threads).submit(np.copyto, d, s) for d, s in views[1:]]
    np.copyto(*views[0])
    for done in others:
        done.result()
