"""The cpu Transpose Engine gives the input rows it copied out of a lazily held stream back
to the run's arena once it has turned them, and a padding flag table is made without a key
array beside it (issue 61, first-run memory: on `drawn_s2_3` the 2.25 MiB copy of the
stream's rows stayed held beside the contraction, and the commit after the engine made
4 MiB of keys to read 1 MiB of flags; 4.5x the tensors, now 3.9x). The kernel still equals
numpy's product bit for bit."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from backends.cpu import CpuBackend, CpuOptions, arena, keys
from benchmarks.drawn_kernels import pinned

M, N, K = 256, 128, 128  # `a[k,m]` 64 KiB of bf16, turned on the device


def _kernel():
    return pinned("tr_scratch", "out[m,n] = w[n,k] * a[k,m]", "bf16:f32", dict(m=M, n=N, k=K),
                  dict(placement="8x8 of 256x16, on 1/4 of the slices", trf="w", packet=32, order="ij",
                       reuse="all", pair=False), "tiled", transpose="device")


def test_the_turned_rows_copy_goes_back_and_the_result_is_numpys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arena, "MIN_BYTES", 1 << 14)  # this small kernel's buffers are the arena's
    d = _kernel()
    rng = np.random.default_rng(7)
    arrays = d.inputs(rng)
    CpuBackend(CpuOptions(threads=1, blas_threads=1)).run(d.kernel, tuple(x.copy() for x in arrays))  # compiled once
    args = [x.copy() for x in arrays]
    tracemalloc.start()
    try:
        CpuBackend(CpuOptions(threads=1, blas_threads=1)).run(d.kernel, tuple(args))  # a new arena: a first run
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    w, a = (x.astype(np.float64) for x in arrays[:2])  # w[n,k], a[k,m]
    want = np.asarray((w @ a).T, np.float32) + np.float32(0)  # small integers: every order of the sums exact
    np.testing.assert_array_equal(args[-1].view(np.uint32), want.view(np.uint32))
    tensors = sum(x.nbytes for x in arrays)
    assert peak < 3.4 * tensors, (peak, tensors)
