"""A kernel's first run gives back heap memory that its slow ops freed (issue 61, first-run memory).

Once glibc's mmap threshold has risen (it follows the largest block freed), numpy's large
temporaries come from the heap, and heap memory that is freed stays resident. A first run
that frees memory of one size and then asks for another size holds both at its peak
(`drawn_s1_4`: ~2 MiB freed by its time contraction stayed resident while its result was
written out). `malloc_trim` hands those pages back to the system. A trim after every op
was tried (mem28) and cost too much CPU: each trim walks the heap's free chunks, and
memory reused after a trim faults its pages in again. Most runs in the test suite are
first runs.

So the trim is gated twice, and each gate is cheap:
- An op is looked at only if it took at least `SLOW_OP` seconds, measured from the end of
  the previous look. An op that frees MiBs of temporaries has to write them first, so
  it is slow. Ops of a few microseconds cost two clock reads each.
- After such an op, the process's resident size is read (`/proc/self/statm`, less the
  file pages). The heap is trimmed only when that size passes its level at the last trim
  (at first, at the run's start) by `TRIM_BYTES`, or by a quarter of the growth up to
  that level when that is more. Only a new high can raise the run's peak; a run that
  frees and takes back the same memory tile after tile stays at its level and is not
  trimmed again (a trim there only makes the next tile fault its pages back in), and a
  run whose memory keeps growing trims a few times, not once per MiB. (glibc's
  `mallinfo2` would say how much of the heap is free, but it walks every free chunk as
  the trim does: ~4 ms a call on a drawn kernel's first run.)

Later runs of the kernel never trim: they ask for the same sizes again, and the resident
freed memory serves them with no page faults. Without glibc's `malloc_trim` or Linux's
`/proc`, nothing is trimmed. No value a run computes depends on this.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["first_run", "after_op", "resident", "SLOW_OP", "TRIM_BYTES"]

SLOW_OP = 1e-3
"""Seconds an op must take (since the previous look) before the heap's free bytes are read."""
TRIM_BYTES = 1 << 20
"""The least growth of the resident size, since the run started or since the last trim, that a trim follows."""


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None when the C library has none."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _malloc_trim()
_LOCAL = threading.local()


def resident() -> int | None:
    """The process's resident bytes not backed by a file (`/proc/self/statm`: resident less
    shared; the code pages a first run touches are not heap), or None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            fields = f.read().split()
        return (int(fields[1]) - int(fields[2])) * mmap.PAGESIZE
    except (OSError, IndexError, ValueError):  # pragma: no cover - not Linux
        return None


class _Watch:
    """One first run's state: its resident size at the start and at the last trim, and when
    the last look ended."""

    def __init__(self, start: int) -> None:
        self.start = self.level = start
        self.clock = time.perf_counter()


@contextlib.contextmanager
def first_run(first: bool) -> Iterator[None]:
    """The scope of one run on this thread; `first`: the kernel's first run, whose ops
    `after_op` looks at (another run's ops are left alone)."""
    outer = getattr(_LOCAL, "watch", None)
    start = resident() if first and _TRIM is not None else None
    _LOCAL.watch = None if start is None else _Watch(start)
    try:
        yield
    finally:
        _LOCAL.watch = outer


def after_op() -> bool:
    """Called by the executor after each op: trim the heap when this is a first run, the op
    was slow, and the resident size grew enough (module docstring). Whether it trimmed."""
    watch = getattr(_LOCAL, "watch", None)
    if watch is None:
        return False
    now = time.perf_counter()
    slow, watch.clock = now - watch.clock >= SLOW_OP, now
    if not slow:
        return False
    rss = resident()
    if rss is None or _TRIM is None or rss - watch.level < max(TRIM_BYTES, (watch.level - watch.start) // 4):
        watch.clock = time.perf_counter()
        return False
    _TRIM(0)
    watch.level, watch.clock = rss, time.perf_counter()
    return True
