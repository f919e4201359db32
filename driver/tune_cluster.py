"""A dask.distributed cluster on this machine, started the way docs/tuning.md says: one
`dask scheduler` process and `dask worker` processes pointed at it, which import the tuner
when they start (`--preload`) and run without dask's statistical profiler (`WORKER_ENV`);
both with dask's monitoring timers slowed (`QUIET_TIMERS`).

`local_cluster(workers, threads)` starts them on free ports, waits (with a timeout) until
the workers have joined, yields the scheduler's address (tcp://127.0.0.1:PORT) and stops
every process it started on the way out, killing any that does not stop in time. The
tuner's CI test and benchmarks/bench_tune.py run `tune --scheduler` against it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ir.errors import NpuOptError

__all__ = ["QUIET_TIMERS", "SCHEDULER_ENV", "WORKER_ENV", "local_cluster"]

ROOT = Path(__file__).resolve().parents[1]

# A tune worker's settings (docs/tuning.md "Workers"): dask's statistical profiler samples the
# stack of a running task every 10 ms, which costs a compile-bound worker about 0.01 CPU
# seconds a wall second (measured on one drawn space's batch, profiler on 0.023, off 0.013 s
# a second above the task's own CPU); nobody reads a tune worker's profile.
#
# The timers of dask's event loops cost CPU every wall second, whatever the load: an idle
# worker spent 12 ms a second, an idle scheduler 12 (measured over 6 s, 2 rounds). Most of it
# is the tick (every 20 ms, it only measures how late the loop is, for a warning), then the
# system monitor (every 0.5 s, for the dashboard) and the worker's memory monitor (every
# 0.1 s; a tune worker holds a few MB). At 1 s, 2 s and 1 s: 3 ms a second a worker, 4 the
# scheduler. On two cores these timers take their CPU from the workers' compiles.
QUIET_TIMERS = {"DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
                "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s"}
SCHEDULER_ENV = QUIET_TIMERS
WORKER_ENV = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
              "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "1s", **QUIET_TIMERS}
PRELOAD = "driver.tune_share"  # the tuner, imported at the worker's start, not in its first task


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask() -> list[str]:
    """The `dask` command: the script beside this Python, else on PATH."""
    beside = Path(sys.executable).with_name("dask")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("dask")
    if found is None:
        raise NpuOptError("no `dask` command: pip install 'npu-opt[tune]'", code="USAGE")
    return [found]


def _stop(procs: list[subprocess.Popen], timeout: float) -> None:
    """Workers first, then the scheduler (a worker whose scheduler is gone first spends
    seconds trying to reach it again); a process that does not stop in time is killed."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


@contextmanager
def local_cluster(workers: int = 2, threads: int = 1, timeout: float = 60.0) -> Iterator[str]:
    """Yield the address of a scheduler with `workers` worker processes of `threads` threads."""
    from dask.distributed import Client  # optional: `pip install 'npu-opt[tune]'`

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env, "cwd": str(ROOT)}
    procs = [subprocess.Popen([*_dask(), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], **{**quiet, "env": {**env, **SCHEDULER_ENV}})]
    try:
        procs.append(subprocess.Popen([*_dask(), "worker", address, "--nworkers", str(workers), "--nthreads",
                                       str(threads), "--no-dashboard", "--host", "127.0.0.1", "--preload", PRELOAD],
                                      **{**quiet, "env": {**env, **WORKER_ENV}}))
        deadline = time.monotonic() + timeout
        with Client(address, timeout=timeout) as client:
            while len(client.scheduler_info()["workers"]) < workers:
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                    raise NpuOptError(f"the dask workers did not join {address} within {timeout:g} s",
                                      code="USAGE")
                time.sleep(0.1)
        yield address
    finally:
        _stop(procs, timeout=20.0)
