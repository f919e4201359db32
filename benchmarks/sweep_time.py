"""One tuning sweep timed the way bench_tune.py judges it, in whichever process runs it (the
benchmark's own, or its dask side process, benchmarks/tune_dask_side.py): wall seconds, the
CPU of the process that called `tune` and of its reaped children (a `--jobs` pool's
workers once shut down), the winner's index, the counts of ok, pruned and refused
candidates, and the page faults of both (`Faults`).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["Faults", "children_cpu", "timed"]


class Faults(NamedTuple):
    """What the sweep's fork cost in pages: the system CPU seconds and the minor page faults
    of the process that called `tune` (`own_*`) and of its reaped children (`kids_*`). After
    a fork every page the parent and its worker share is copy-on-write, so the first page
    each of them writes after it faults and is copied: on the drawn spaces about 2,800
    pages a process in its first candidate (refcounts and the interpreter's inline caches
    across the compiler's code and data), against some 200 in a whole serial sweep."""

    own_sys: float
    own_faults: int
    kids_sys: float
    kids_faults: int


def children_cpu() -> float:
    """CPU seconds of this process's reaped children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _usage() -> tuple[float, int, float, int]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_stime, own.ru_minflt, kids.ru_stime, kids.ru_minflt


def timed(run: Callable[[], Any]) -> tuple[float, float, float, int | None, tuple[int, int, int], Faults]:
    """`run()` (a sweep: `driver.tune.tune`'s result), timed (module docstring)."""
    own, kids, usage = time.process_time(), children_cpu(), _usage()
    start = time.perf_counter()
    result = run()
    wall = time.perf_counter() - start
    own, kids = time.process_time() - own, children_cpu() - kids
    faults = Faults(*(b - a for a, b in zip(usage, _usage())))
    return (wall, own, kids, None if result.winner is None else result.winner.index,
            (result.count("ok"), result.count("pruned"), result.count("refused")), faults)
