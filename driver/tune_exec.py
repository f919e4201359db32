"""Where `driver.tune` runs its batches of candidates: in this process, in `jobs` processes
(this one and `jobs - 1` workers of a concurrent.futures pool), or on a dask.distributed
cluster (`scheduler`, an address such as tcp://host:8786; the workers must see the tune
file at the same path and import npu-opt). An executor takes tasks (`submit`), says which
are done (`wait`), and whether this process evaluates batches too (`helps`).

A worker that is not this process loads the tune file itself, by path (`FactoryRef`,
driver/tune_space.py).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor
from concurrent.futures import wait as futures_wait
from pathlib import Path
from typing import Any

from ir.errors import InternalError, NpuOptError, exception_text
import driver.tune_eval  # noqa: F401 - the workers' task function and everything it compiles with
from driver.tune_space import FactoryRef, load_space, resolve_space, space_names

__all__ = ["FactoryRef", "load_space", "make_executor", "resolve_space", "space_names"]


class _Inline:
    """No workers: this process evaluates every batch."""

    width, workers, helps, description = 1, 0, True, "inline"

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Any:
        raise InternalError("tune: the inline executor takes no tasks")

    def wait(self, handles: Collection[Any], block: bool) -> list[Any]:
        return []

    def result(self, handle: Any) -> Any:
        raise InternalError("tune: the inline executor has no tasks")

    def close(self) -> None:
        pass


def _warm(ref: FactoryRef | None) -> None:
    """A pool worker's start: load the tune file before the first task (this module's import
    brought the tuner)."""
    if ref is not None:
        load_space(ref)


def _start_method() -> Any:
    """fork while this process runs one thread: the workers start with its imports (and its
    pure caches) warm, in milliseconds. Forking a process that runs other threads (a BLAS
    pool, a dask client's event loop) could copy a lock one of them holds: then spawn, and
    each worker imports the tuner itself before its first task (`_warm`)."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


class _Futures:
    """What the pool and dask executors share: their tasks' handles are futures."""

    def wait(self, handles: Collection[Any], block: bool) -> list[Any]:
        if not block:
            return [h for h in handles if h.done()]
        done, _ = self._wait(list(handles), return_when=FIRST_COMPLETED)
        return list(done)

    def result(self, handle: Any) -> Any:
        return handle.result()


class _Pool(_Futures):
    """`jobs` processes in all: this one, which evaluates batches between collecting the
    workers' results, and `jobs - 1` spawned workers (a worker's start overlaps the batches
    this process evaluates meanwhile)."""

    _wait = staticmethod(futures_wait)

    def __init__(self, jobs: int, ref: FactoryRef | None) -> None:
        self.width, self.workers, self.helps = jobs, jobs - 1, True
        self.description = f"{jobs} processes"
        self._pool = ProcessPoolExecutor(self.workers, mp_context=_start_method(),
                                         initializer=_warm, initargs=(ref,))

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Any:
        return self._pool.submit(fn, item)

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


class _Dask(_Futures):
    """The threads of a dask.distributed cluster's workers; this process only sends the
    batches and collects the results."""

    helps = False

    def __init__(self, address: str) -> None:
        try:
            from dask.distributed import Client, wait  # optional: `pip install 'npu-opt[tune]'`
        except ImportError as e:
            raise NpuOptError("--scheduler needs dask.distributed: pip install 'npu-opt[tune]'", code="USAGE") from e
        self._client, threads = _connect(Client, address)
        self._wait = wait
        self.width = self.workers = max(1, threads)
        self.description = f"dask at {address} ({threads} threads)"

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Any:
        return self._client.submit(fn, item, pure=False)

    def close(self) -> None:
        self._client.close()


CONNECT_TIMEOUT = 30.0  # seconds to reach a scheduler and hear from it
_ADDRESS = re.compile(r"(?:(?:tcp|tls|ws|wss|ucx)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}")


def _connect(client_class: Any, address: str) -> tuple[Any, int]:
    """A client of the dask scheduler at `address` and the scheduler's count of worker
    threads, else a USAGE error naming the address. A child process asks first
    (driver/dask_probe.py), killed at `CONNECT_TIMEOUT` and a few seconds more: a port that
    accepts the connection and never answers holds a `Client` for good. An address of no
    network scheme's form (`tcp://host:port`, `tls://`, `ws://`, `wss://`, `ucx://`, or a bare
    `host:port`) is refused without the child."""
    if not _ADDRESS.fullmatch(address):
        raise NpuOptError(f"cannot use {address!r} as a dask scheduler (an address like tcp://host:8786): it is "
                          "not of the form scheme://host:port", code="USAGE")
    try:
        probe = subprocess.run([sys.executable, "-m", "driver.dask_probe", address, str(CONNECT_TIMEOUT)],
                               capture_output=True, text=True, timeout=CONNECT_TIMEOUT + 10,
                               cwd=str(Path(__file__).resolve().parents[1]))
        why = None if probe.returncode == 0 else (probe.stderr.strip().splitlines() or ["no answer"])[-1]
    except subprocess.TimeoutExpired:
        why = "timed out"
    if why is not None and "timed out" in why.lower():  # killed at the deadline, or dask's own timeout
        raise NpuOptError(f"the dask scheduler at {address!r} did not answer within {CONNECT_TIMEOUT:g} s: "
                          "is a dask scheduler listening there?", code="USAGE")
    if why is not None:
        raise NpuOptError(f"cannot use {address!r} as a dask scheduler (an address like tcp://host:8786): {why}",
                          code="USAGE")
    client = client_class(address, timeout=CONNECT_TIMEOUT)
    return client, sum(client.nthreads().values())


def make_executor(jobs: int, scheduler: str | None, *, in_process: bool, ref: FactoryRef | None = None) -> Any:
    """Inline for one job (or a space with no file to load it from), else a pool or dask."""
    if scheduler is not None:
        if in_process:
            raise NpuOptError("a dask scheduler runs tune files: give the space's file (FactoryRef)", code="USAGE")
        return _Dask(scheduler)
    if jobs < 1:
        raise NpuOptError(f"--jobs takes a positive count, not {jobs}", code="USAGE")
    jobs = min(jobs, os.cpu_count() or 1)
    if jobs == 1 or in_process:
        return _Inline()
    return _Pool(jobs, ref)
