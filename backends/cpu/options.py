"""How the cpu backend evaluates a kernel: `CpuOptions`, passed explicitly from
`CpuBackend` through `execute` to the ops that use them. No option changes a result:
every combination is bit-identical (the tests compare them)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

__all__ = ["CpuOptions", "DEFAULT", "blas_threads"]


def _default_threads() -> int:
    try:
        return max(1, min(4, len(os.sched_getaffinity(0))))
    except (AttributeError, OSError):
        return max(1, min(4, os.cpu_count() or 1))


@attrs.frozen
class CpuOptions:
    """`fast_moves`: affine moves as strided copies or views (False: every move is a
    gather of its index plan, the reference). `fast_contract`: whole contractions by
    `backends.cpu.contract_fast` (False: the dense reference path only). `threads`: the
    threads sharing the float products (1 runs them on the calling thread).
    `blas_threads`: the BLAS thread pool while the backend's matmuls run; one thread by
    default, since a small machine shared with other processes only loses to BLAS
    threads competing for its CPUs (None leaves the pool as it is). `jit`: float
    contractions by the compiled core `backends.cpu.contract_jit` when numba is
    importable (False, or the environment variable NPU_OPT_CPU_JIT=0: the numpy core)."""

    fast_moves: bool = True
    fast_contract: bool = True
    threads: int = attrs.field(factory=_default_threads)
    blas_threads: int | None = 1
    jit: bool = True
    report_uninit: bool = False  # refuse (VIEW-12) a read of new() cells nothing wrote


DEFAULT = CpuOptions()

_CONTROLLER = None
_LIMIT_LOCK = threading.Lock()
_LIMIT: list = [0, None]  # runs inside `blas_threads` now, and the threadpoolctl limiter they share


@contextmanager
def blas_threads(limit: int | None) -> Iterator[None]:
    """The BLAS thread pool limited to `limit` threads inside the block (threadpoolctl,
    imported on first use: most commands never call BLAS). The pool is the process's:
    blocks that overlap (runs on several threads) share the limit the first of them set,
    and the last one to leave restores the pool as it was before the first."""
    if limit is None:
        yield
        return
    _enter_limit(limit)
    try:
        yield
    finally:
        _leave_limit()


def _enter_limit(limit: int) -> None:
    global _CONTROLLER
    with _LIMIT_LOCK:
        if _LIMIT[0] == 0:
            if _CONTROLLER is None:
                from threadpoolctl import ThreadpoolController

                _CONTROLLER = ThreadpoolController()
            _LIMIT[1] = _CONTROLLER.limit(limits=limit, user_api="blas")
        _LIMIT[0] += 1


def _leave_limit() -> None:
    with _LIMIT_LOCK:
        _LIMIT[0] -= 1
        if _LIMIT[0] == 0:
            limiter, _LIMIT[1] = _LIMIT[1], None
            limiter.restore_original_limits()
