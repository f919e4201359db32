"""The cpu backend's worker threads: one pool per thread count, and work shared among them.

The float contraction, a large matmul's rows (BLAS on one thread) and a large DMA copy share
these pools; their size is `CpuOptions.threads`. numpy releases the GIL while it copies and
multiplies, so two threads copying halves of a large buffer take about half the time of one:
the 8 MiB DMAs of a batched bf16 GEMM went from 0.6 to 0.3 ms each (issue 38 item 3).

Work is shared by `share`: its parts are taken one at a time, by the calling thread too, so
a pool thread the machine holds back (two cores shared with other processes) takes fewer
parts or none, and the call never waits for a part nobody has started (issue 61: BLAS's own
threads, which wait for each other by spinning, made a bf16 kernel slower on two threads
than on one).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from backends.cpu.wide_copy import wide_runs

__all__ = ["pool", "share", "copy_into", "SPLIT_COPY_MIN"]

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


def share(parts: Sequence[Callable[[], None]], threads: int) -> None:
    """Run each of `parts` once, on the calling thread and up to `threads - 1` pool threads,
    each taking the next part not taken yet; returns when every part is done (a part's
    error is raised here). One part, or one thread: all on the calling thread."""
    helpers = min(threads, len(parts)) - 1
    if helpers <= 0:
        for part in parts:
            part()
        return
    queue, lock = iter(parts), threading.Lock()

    def drain() -> None:
        while True:
            with lock:
                part = next(queue, None)
            if part is None:
                return
            part()

    # the thread count's one pool (threads - 1 helpers at most), whatever the number of parts
    others = [pool(threads - 1).submit(drain) for _ in range(helpers)]
    try:
        drain()  # the calling thread takes parts too
    finally:
        for done in others:
            if not done.cancel():  # a helper that never started has nothing left to take
                done.result()


def copy_into(dst: np.ndarray, src: np.ndarray, threads: int = 1) -> None:
    """`np.copyto(dst, src)` (same shapes), the outermost axis longer than one cut into
    parts `share`d among `threads` threads when the copy is large; the same bytes either way.
    Runs of a few cells contiguous in both are copied as wider words (`wide_runs`)."""
    dst, src = wide_runs(dst, src)
    axis = next((k for k, n in enumerate(dst.shape) if n > 1), None)
    if threads <= 1 or axis is None or dst.nbytes < SPLIT_COPY_MIN:
        np.copyto(dst, src)
        return
    parts = min(2 * threads, dst.shape[axis])
    cuts = [dst.shape[axis] * k // parts for k in range(parts + 1)]
    lead = (slice(None),) * axis
    share([lambda a=a, b=b: np.copyto(dst[(*lead, slice(a, b))], src[(*lead, slice(a, b))])
           for a, b in zip(cuts, cuts[1:])], threads)

