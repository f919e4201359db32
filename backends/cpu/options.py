"""How the cpu backend evaluates a kernel: `CpuOptions`, passed explicitly from
`CpuBackend` through `execute` to the ops that use them. No option but `numerics` changes
a result: every combination of the others is bit-identical (the tests compare them)."""

from __future__ import annotations

import os

import attrs

from ir.blas import blas_threads

__all__ = ["CpuOptions", "DEFAULT", "NUMERICS", "blas_threads"]

NUMERICS = ("chip", "reference")
"""The values of `CpuOptions.numerics` (and of `npu_opt.run(..., numerics=)`)."""


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
    threads sharing the float products, and a large integer matmul's rows while BLAS runs
    on one thread (`blas_threads=1`; backends/cpu/contract_int.py) (1 runs them on the
    calling thread).
    `blas_threads`: the BLAS thread pool while the backend's integer matmuls run; one thread by
    default, since a small machine shared with other processes only loses to BLAS
    threads competing for its CPUs (None leaves the pool as it is). The bf16 matmuls run
    BLAS on one thread whatever the number (BLAS's threads wait for each other by spinning:
    two made a bf16 kernel 20x slower than one on a loaded machine, issue 61); None leaves
    the pool as it is there too. With 1, or with any number when every contraction of
    the kernel accumulates floats, a run limits the pool once for all its matmuls. `jit`: float
    contractions by the compiled core `backends.cpu.contract_jit` when numba is
    importable (False, or the environment variable NPU_OPT_CPU_JIT=0: the numpy core).
    `numerics`: "chip" (the default) computes what the chip computes; "reference" folds
    float contractions in furiosa-opt's host order instead (`backends.cpu.contract.serial_fold`),
    so a test ported from furiosa-opt matches its expected values bit for bit."""

    fast_moves: bool = True
    fast_contract: bool = True
    threads: int = attrs.field(factory=_default_threads)
    blas_threads: int | None = 1
    jit: bool = True
    report_uninit: bool = False  # refuse (VIEW-12) a read of new() cells nothing wrote
    numerics: str = attrs.field(default="chip", validator=attrs.validators.in_(NUMERICS))


DEFAULT = CpuOptions()
