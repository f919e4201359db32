"""Where `driver.tune` runs its candidates: in this process, in a process pool of `jobs`
workers (concurrent.futures), or on a dask.distributed cluster (`scheduler`, an address
such as tcp://host:8786; the workers must see the tune file at the same path).

A worker that is not this process loads the tune file itself, by path (`FactoryRef`), as
`npu-opt check` loads a kernel file: a factory defined in a file the CLI imported cannot be
pickled by reference.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import attrs

from ir.errors import NpuOptError
from driver.discover import _load as load_file  # one file, imported on its own as `check` does
from npu_opt.tune import Space
from driver.tune_guard import guarded

__all__ = ["FactoryRef", "load_space", "make_executor", "resolve_space", "space_names"]


@attrs.frozen
class FactoryRef:
    """The `Space` bound to `attr` in the tune file `path`."""

    path: str
    attr: str


_MODULES: dict[str, Any] = {}
_LOCK = threading.Lock()


def load_space(ref: FactoryRef) -> Space:
    """The space `ref` names, its file imported on its own, once per process (USAGE when it
    cannot be), its user code guarded."""
    module = _module(ref.path)
    space = getattr(module, ref.attr, None)
    if not isinstance(space, Space):
        raise NpuOptError(f"{ref.path}: no `npu_opt.tune.Space` named {ref.attr!r}", code="USAGE")
    return guarded(space, ref.path)  # its code may not exit npu-opt (driver/tune_guard.py)


def resolve_space(ref: Any) -> Space:
    """A job's space: the object itself, or the file's."""
    return ref if isinstance(ref, Space) else load_space(ref)


class _Inline:
    width, description = 1, "inline"

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return [fn(x) for x in items]

    def close(self) -> None:
        pass


class _Pool:
    def __init__(self, jobs: int) -> None:
        self.width, self.description = jobs, f"{jobs} processes"
        # spawn: a forked worker would inherit this process's BLAS threads and trace caches
        self._pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return list(self._pool.map(fn, items))

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


class _Dask:
    def __init__(self, address: str) -> None:
        try:
            from dask.distributed import Client  # optional: `pip install 'npu-opt[tune]'`
        except ImportError as e:
            raise NpuOptError("--scheduler needs dask.distributed: pip install 'npu-opt[tune]'", code="USAGE") from e
        try:
            self._client = Client(address, timeout=30)
        except OSError as e:
            raise NpuOptError(f"cannot reach the dask scheduler at {address}: {e}", code="USAGE") from e
        threads = sum(self._client.nthreads().values())
        self.width, self.description = max(1, threads), f"dask at {address} ({threads} threads)"

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        futures = self._client.map(fn, list(items), pure=False)
        return self._client.gather(futures)

    def close(self) -> None:
        self._client.close()


def make_executor(jobs: int, scheduler: str | None, *, in_process: bool) -> Any:
    """Inline for one job (or a space with no file to load it from), else a pool or dask."""
    if scheduler is not None:
        if in_process:
            raise NpuOptError("a dask scheduler runs tune files: give the space's file (FactoryRef)", code="USAGE")
        return _Dask(scheduler)
    if jobs < 1:
        raise NpuOptError(f"--jobs takes a positive count, not {jobs}", code="USAGE")
    if jobs == 1 or in_process:
        return _Inline()
    return _Pool(min(jobs, os.cpu_count() or 1))


def _module(path: str) -> Any:
    """The tune file's module, imported once per process: `npu-opt tune` reads its space names,
    then its space, then (inline) each candidate's factory from the one import."""
    key = str(Path(path).resolve())
    with _LOCK:
        if key not in _MODULES:
            module, error = load_file(Path(path))
            if error is not None:
                where = f"{path}:{error.line}" if error.line else path  # the user's line, as `check` gives it
                raise NpuOptError(f"{where}: cannot load the tune file: {error.message}", code=error.code)
            _MODULES[key] = module
        return _MODULES[key]


def space_names(path: str) -> list[str]:
    """The names of the `Space` objects a tune file binds at module level, in file order."""
    return [k for k, v in vars(_module(path)).items() if isinstance(v, Space)]
