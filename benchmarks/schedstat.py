"""A process's CPU as Linux's scheduler counts it, per thread, read from
`/proc/<pid>/task/<tid>/schedstat`: nanoseconds run on a CPU, then nanoseconds spent
runnable but waiting for one. The clock `time.process_time` sums, but readable from outside
the process (reading it costs the process nothing) and thread by thread. For the
benchmarks: bench_tune.py reads its dask workers' CPU and wait, bench_cpu_drawn.py waits
until this process's BLAS threads stop spinning.
"""

from __future__ import annotations

import os

__all__ = ["thread_times"]


def thread_times(pid: int | str = "self") -> dict[int, tuple[int, int]]:
    """{thread id: (nanoseconds run, nanoseconds runnable but waiting)} of every live thread of
    process `pid` ("self": this one). A thread that ends while it is read is left out."""
    out: dict[int, tuple[int, int]] = {}
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/schedstat") as f:
                fields = f.read().split()
            out[int(tid)] = int(fields[0]), int(fields[1])
        except (OSError, ValueError, IndexError):  # the thread ended meanwhile
            continue
    return out
