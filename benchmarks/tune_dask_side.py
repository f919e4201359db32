"""bench_tune.py's dask client, in a process of its own: the benchmark's process, from which
each `--jobs 2` sweep forks its pool worker, then never imports dask. A real `npu-opt tune
--jobs 2` has not imported it, and a fork of a process holding dask's ~25 MB more of
modules costs more: the fork itself (tune25: 8.2 against 5.7 ms), and the worker's
copy-on-write faults and exit.

`DaskSide(address)` spawns the process (a new interpreter: this one may not hold a thread a
fork could copy) and talks to it over a pipe, one request at a time; the process runs the
dask sweeps (`sweep`) and reads the cluster's workers through a client (`tasks`): their
candidates' CPU (benchmarks/tune_task_cpu.py) and, at the start, their pids, which the
benchmark reads from /proc itself.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from typing import Any

__all__ = ["DaskSide"]


def _serve(conn: Any, address: str) -> None:
    """The dask side's loop: answer each request (name, args) with its result until None."""
    from dask.distributed import Client
    from threadpoolctl import threadpool_limits

    import attrs

    from benchmarks.sweep_time import timed
    from benchmarks.tune_task_cpu import count_task_cpu, task_cpu
    from driver.tune import tune
    from driver.tune_exec import load_space
    from ir.memo import clear_memos

    def tasks(cold: bool) -> dict[str, tuple[float, int]]:
        with Client(address, timeout=30) as client:
            if cold:
                client.run(clear_memos)
            out = client.run(task_cpu)
        time.sleep(0.1)  # the scheduler and the workers drop the closed client's connection
        return out

    def pids() -> tuple[dict[str, int], int]:
        with Client(address, timeout=30) as client:
            client.run(count_task_cpu)
            out = client.run(os.getpid), client.run_on_scheduler(os.getpid)
        time.sleep(0.1)
        return out

    def sweep(ref: Any, cold: bool) -> tuple[float, float, float, int | None, tuple[int, int, int]]:
        """One dask sweep, timed (`sweep_time.timed`)."""
        space = attrs.evolve(load_space(ref), inputs=None, oracle=None)
        if cold:
            clear_memos()
        return timed(lambda: tune(space, ref=ref, scheduler=address))

    handlers = {"tasks": tasks, "pids": pids, "sweep": sweep}
    with threadpool_limits(1):
        while (request := conn.recv()) is not None:
            name, args = request
            conn.send(handlers[name](*args))


class DaskSide:
    """The spawned dask client process of one cluster (a context manager: stopped on exit)."""

    def __init__(self, address: str) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._proc = context.Process(target=_serve, args=(child, address))  # not a daemon: the dask probe is its child
        self._proc.start()
        child.close()

    def ask(self, name: str, *args: Any) -> Any:
        self._conn.send((name, args))
        return self._conn.recv()

    def __enter__(self) -> DaskSide:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._conn.send(None)
        except OSError:
            pass
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
