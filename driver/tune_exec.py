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
import time
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor
from concurrent.futures import wait as futures_wait
from pathlib import Path
from typing import Any

from ir.errors import InternalError, NpuOptError
import driver.tune_eval  # noqa: F401 - the workers' task function and everything it compiles with
from driver.dask_probe import ask_scheduler
from driver.tune_share import TOPIC, ClusterBest, on_cluster
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

    def starting(self) -> bool:
        return False

    def best(self) -> int | None:
        return None

    def settle(self) -> None:
        pass

    def close(self) -> None:
        pass


def _warm(ref: FactoryRef | None, best: Any) -> None:
    """A pool worker's start: prune against the pool's shared best makespan, load the tune
    file before the first task (this module's import brought the tuner), and freeze the heap
    it starts with (`freeze_heap`: a forked worker's collections then never walk, and copy,
    the pages it shares with this process)."""
    driver.tune_eval.share_best(driver.tune_eval.PoolBest(best))
    if ref is not None:
        load_space(ref)
    driver.tune_eval.freeze_heap()


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

    def starting(self) -> bool:
        """Whether the executor's workers cannot take tasks yet (a pool's can at once)."""
        return False

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
        context = _start_method()
        best = context.Value("q", 0)  # the best makespan any of the pool's processes found (0: none yet)
        self._best = driver.tune_eval.PoolBest(best)
        driver.tune_eval.share_best(self._best)  # this thread's (driver/tune_eval.py `_Here`): the sweep's
        self._pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_warm, initargs=(ref, best))

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Any:
        return self._pool.submit(fn, item)

    def best(self) -> int | None:
        """The best makespan any of the pool's processes has found (None: none yet)."""
        return self._best.best()

    def settle(self) -> None:
        pass

    def close(self) -> None:
        driver.tune_eval.share_best(None)
        self._pool.shutdown(cancel_futures=True)


class _Dask(_Futures):
    """The threads of a dask.distributed cluster's workers. While the scheduler is being asked
    whether it answers (`_Probe`, a child process: a second or so of importing dask) this
    process evaluates batches itself; once it has answered, the client connects and this
    process only sends the batches and collects the results."""

    def __init__(self, address: str, sweep: str = "") -> None:
        try:
            from dask.distributed import Client, wait  # optional: `pip install 'npu-opt[tune]'`
        except ImportError as e:
            raise NpuOptError("--scheduler needs dask.distributed: pip install 'npu-opt[tune]'", code="USAGE") from e
        self._address, self._client_class, self._wait = address, Client, wait
        self._probe = _Probe(address, Client)
        self._client = None
        self._board = ClusterBest(lambda message: None)  # what the workers publish of this sweep's best
        self._board.sweep = sweep
        self.width, self.workers, self.helps = 1, 0, True  # this process alone until the scheduler answers
        self.description = f"dask at {address}"

    def _connect(self, block: bool) -> None:
        """Connect once the probe has answered (`block`: wait for it); its refusal raises."""
        if self._client is None and self._probe.answered(block):
            self._client = self._client_class(self._address, timeout=CONNECT_TIMEOUT)
            # the makespans the workers publish reach this process too (`best`): the sweep prunes
            # its queue by them before the batch that found one is back
            self._client.subscribe_topic(TOPIC, self._board.heard)
            threads = sum(self._client.nthreads().values())
            self.width = self.workers = max(1, threads)
            self.helps = False
            self.description = f"dask at {self._address} ({threads} threads)"

    def starting(self) -> bool:
        """True while the probe still asks the scheduler (connects once it has answered)."""
        self._connect(False)
        return self._client is None

    def wait(self, handles: Collection[Any], block: bool) -> list[Any]:
        self._connect(False)
        return super().wait(handles, block)

    def best(self) -> int | None:
        """The best makespan of this sweep a worker has published (None: none heard yet)."""
        return self._board.best()

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Any:
        # the task prunes against the best makespan any worker of the cluster has found (tune_share)
        return self._client.submit(on_cluster, fn, item, pure=False)

    def settle(self) -> None:
        self._connect(True)  # a scheduler that never answered is an error even if this process did all the work

    def close(self) -> None:
        self._probe.stop()
        if self._client is not None:
            self._client.close()


CONNECT_TIMEOUT = 30.0  # seconds to reach a scheduler and hear from it
PROBE_GRACE = 10.0  # seconds past CONNECT_TIMEOUT before the probe child is killed (dask's own timeout may come first)
_ADDRESS = re.compile(r"(?:(?:tcp|tls|ws|wss|ucx)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}")


def _ask_and_send(client_class: Any, address: str, conn: Any) -> None:
    """A forked probe's work: the answer (`ask_scheduler`) sent back through `conn`."""
    conn.send(ask_scheduler(client_class, address, CONNECT_TIMEOUT))
    conn.close()


class _Forked:
    """The probe as a fork of this process, which has imported dask already: no interpreter
    start and no second import of dask (about a second of CPU) before the cluster gets work."""

    def __init__(self, address: str, client_class: Any) -> None:
        context = multiprocessing.get_context("fork")
        self._conn, sender = context.Pipe(duplex=False)
        self._proc = context.Process(target=_ask_and_send, args=(client_class, address, sender), daemon=True)
        self._proc.start()
        sender.close()

    def outcome(self, timeout: float) -> tuple[bool, str | None]:
        """(whether the child has finished, why the scheduler did not answer: None if it did)."""
        if not self._conn.poll(timeout):
            return False, None
        try:
            why = self._conn.recv()
        except EOFError:
            why = "the probe process ended without an answer"
        self._proc.join()
        return True, why

    def kill(self) -> None:
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()


class _Spawned:
    """The probe as a new interpreter (`python -m driver.dask_probe`): when this process runs
    other threads, which a fork could copy holding a lock."""

    def __init__(self, address: str) -> None:
        self._child = subprocess.Popen(
            [sys.executable, "-m", "driver.dask_probe", address, str(CONNECT_TIMEOUT)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=str(Path(__file__).resolve().parents[1]))

    def outcome(self, timeout: float) -> tuple[bool, str | None]:
        try:
            self._child.wait(timeout)
        except subprocess.TimeoutExpired:
            return False, None
        err = self._child.communicate()[1]
        return True, None if self._child.returncode == 0 else (err.strip().splitlines() or ["no answer"])[-1]

    def kill(self) -> None:
        if self._child.poll() is None:
            self._child.kill()
            self._child.communicate()


class _Probe:
    """Does the dask scheduler at `address` answer? A child process asks (forked from this one
    when it runs one thread, else driver/dask_probe.py), killed at `CONNECT_TIMEOUT` and `PROBE_GRACE`
    seconds more: a port that accepts the connection and never answers holds a `Client` for
    good. An address of no network scheme's form (`tcp://host:port`, `tls://`, `ws://`,
    `wss://`, `ucx://`, or a bare `host:port`) is refused at once, without the child; any
    other refusal when `answered` learns it: a USAGE error naming the address."""

    def __init__(self, address: str, client_class: Any) -> None:
        if not _ADDRESS.fullmatch(address):
            raise NpuOptError(f"cannot use {address!r} as a dask scheduler (an address like tcp://host:8786): it is "
                              "not of the form scheme://host:port", code="USAGE")
        self._address = address
        self._deadline = time.monotonic() + CONNECT_TIMEOUT + PROBE_GRACE
        forks = _start_method().get_start_method() == "fork"
        self._child: Any = _Forked(address, client_class) if forks else _Spawned(address)
        self.forked = forks
        self._done = False

    def answered(self, block: bool) -> bool:
        """True once the scheduler has answered; False while the child still asks (`block`:
        wait for it)."""
        if self._done:
            return True
        finished, why = self._child.outcome(max(0.0, self._deadline - time.monotonic()) if block else 0)
        if not finished:
            if not block and time.monotonic() < self._deadline:
                return False
            self.stop()
            why = "timed out"
        if why is not None and "timed out" in why.lower():  # killed at the deadline, or dask's own timeout
            raise NpuOptError(f"the dask scheduler at {self._address!r} did not answer within "
                              f"{CONNECT_TIMEOUT:g} s: is a dask scheduler listening there?", code="USAGE")
        if why is not None:
            raise NpuOptError(f"cannot use {self._address!r} as a dask scheduler (an address like "
                              f"tcp://host:8786): {why}", code="USAGE")
        self._done = True
        return True

    def stop(self) -> None:
        """Kill the child if it still asks."""
        self._child.kill()


def make_executor(jobs: int, scheduler: str | None, *, in_process: bool, ref: FactoryRef | None = None,
                  sweep: str = "") -> Any:
    """Inline for one job (or a space with no file to load it from), else a pool or dask
    (`sweep`: the run's id, which tags the best makespans a dask cluster's workers publish)."""
    if scheduler is not None:
        if in_process:
            raise NpuOptError("a dask scheduler runs tune files: give the space's file (FactoryRef)", code="USAGE")
        return _Dask(scheduler, sweep)
    if jobs < 1:
        raise NpuOptError(f"--jobs takes a positive count, not {jobs}", code="USAGE")
    jobs = min(jobs, os.cpu_count() or 1)
    if jobs == 1 or in_process:
        return _Inline()
    return _Pool(jobs, ref)
