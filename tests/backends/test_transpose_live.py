"""The cpu backend's Transpose Engine transposes the live slices only (a padding slice's
stream is zeros and so is its transpose): a kernel on 1/16 of the slices reading `a` as
stored, `k` first, hands the engine 16 slices' streams, not the whole chip's, and still
equals an independent numpy product on cpu and visa."""

from __future__ import annotations

import numpy as np

import backends.cpu.engines as engines
from backends import get_backend
from benchmarks.drawn_kernels import pinned


def test_the_transpose_reads_the_live_slices_and_equals_numpy(monkeypatch) -> None:
    d = pinned("tr_live", "out[n,m] = w[n,k] * a[k,m]", "bf16:f32", dict(m=64, n=64, k=32),
               dict(placement="8x2 of 8x32, on 1/16 of the slices", trf="w", packet=32, pieces=2), "gemm",
               transpose="device")
    seen: list[int] = []
    real = engines.transpose_data
    monkeypatch.setattr(engines, "transpose_data", lambda x, *a, **k: (seen.append(x.shape[0]), real(x, *a, **k))[1])
    rng = np.random.default_rng(5)
    arrays = d.inputs(rng)
    w, a = (x.astype(np.float64) for x in arrays[:2])   # w[n,k], a[k,m], small integers in bf16
    want = (w @ a).astype(np.float32)
    for backend in ("cpu", "visa"):
        args = [x.copy() for x in arrays]
        get_backend(backend).run(d.kernel, tuple(args))
        assert np.array_equal(args[-1][:64, :64], want), backend
    assert seen and set(seen) == {16}, seen
