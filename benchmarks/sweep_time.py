"""One tuning sweep timed the way bench_tune.py judges it, in whichever process runs it (the
benchmark's own, or its dask side process, benchmarks/tune_dask_side.py): wall seconds, the
CPU of the process that called `tune`, the CPU of its reaped children (a `--jobs` pool's
workers once shut down), the winner's index and the counts of ok, pruned and refused
candidates.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from typing import Any

__all__ = ["children_cpu", "timed"]


def children_cpu() -> float:
    """CPU seconds of this process's reaped children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(run: Callable[[], Any]) -> tuple[float, float, float, int | None, tuple[int, int, int]]:
    """`run()` (a sweep: `driver.tune.tune`'s result), timed (module docstring)."""
    own, kids = time.process_time(), children_cpu()
    start = time.perf_counter()
    result = run()
    wall = time.perf_counter() - start
    own, kids = time.process_time() - own, children_cpu() - kids
    return (wall, own, kids, None if result.winner is None else result.winner.index,
            (result.count("ok"), result.count("pruned"), result.count("refused")))
