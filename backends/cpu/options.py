"""How the cpu backend evaluates a kernel: `CpuOptions`, passed explicitly from
`CpuBackend` through `execute` to the ops that use them. No option changes a result:
every combination is bit-identical (the tests compare them)."""

from __future__ import annotations

import os

import attrs

from ir.blas import blas_threads

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
