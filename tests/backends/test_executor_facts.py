"""The cpu executor reads each handler's facts (takes the options, donates an operand...)
once per kernel, with the rest of its walk (backends/cpu/executor.py `_steps`), not again
at every run of the same kernel (issue 61: ~10 us of Python per op, 66 ops a run of
`drawn_s101_0`); a new kernel object reads them afresh. Results equal the numpy oracle."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from backends.cpu import CpuBackend, CpuOptions
from backends.cpu.handlers import HANDLERS
from benchmarks.drawn_kernels import pinned


def _kernel():
    return pinned("facts_once", "out[m,n] = w[n,k] * a[m,k]", "bf16:bf16", dict(m=128, n=32, k=32),
                  dict(placement="1x2 of 128x16, on 1/128 of the slices", trf="w", packet=16), "gemm").kernel


def _run(backend: CpuBackend, kernel, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w, a = rng.integers(-2, 3, (32, 32)), rng.integers(-2, 3, (128, 32))   # w[n,k], a[m,k]
    out = np.zeros((128, 32), ml_dtypes.bfloat16)
    backend.run(kernel, (w.astype(ml_dtypes.bfloat16), a.astype(ml_dtypes.bfloat16), out))
    want = np.einsum("nk,mk->mn", w, a).astype(ml_dtypes.bfloat16)   # integers |x| <= 128: exact in bf16
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


def test_a_second_run_of_a_kernel_reads_no_handler_facts(monkeypatch) -> None:
    reads = []
    real = HANDLERS.facts

    def spy(key):
        reads.append(key)
        return real(key)

    kernel, backend = _kernel(), CpuBackend(CpuOptions(threads=1))  # the backend keeps the kernel's trace
    monkeypatch.setattr(HANDLERS, "facts", spy)
    _run(backend, kernel, 1)  # a kernel not run yet: its walk made, its facts read
    assert reads
    reads.clear()
    _run(backend, kernel, 2)  # other inputs, the same traced kernel: its steps kept
    assert reads == []
