"""The Cast Engine on a value of few live slices keeps it by its live rows (backends/cpu/
adapters.py `cast` on a `Compact`): a bf16 GEMM on 1/128 of the slices used to convert and
write the full buffer of every slice (4 MiB of an 18 KiB kernel's first run, issue 61);
the result stays equal to the numpy oracle."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from backends.cpu import CpuBackend, CpuOptions, executor
from backends.cpu.compact import Compact
from benchmarks.drawn_kernels import pinned
from ir.ops import Cast


def test_a_cast_on_one_slice_converts_its_live_rows_only(monkeypatch) -> None:
    d = pinned("cast_one_slice", "out[m,n] = w[n,k] * a[m,k]", "bf16:bf16", dict(m=128, n=32, k=32),
               dict(placement="1x2 of 128x16, on 1/128 of the slices", trf="w", packet=16), "gemm")
    seen = []
    real = executor._handler

    def spy(op_cls, found):
        handler = real(op_cls, found)
        if op_cls is not Cast:
            return handler

        def cast(op, buf, **kw):
            out = handler(op, buf, **kw)
            seen.append((type(buf), type(out)))
            return out
        return cast

    monkeypatch.setattr(executor, "_handler", spy)
    rng = np.random.default_rng(5)
    w, a = rng.integers(-2, 3, (32, 32)), rng.integers(-2, 3, (128, 32))   # w[n,k], a[m,k]
    out = np.zeros((128, 32), ml_dtypes.bfloat16)
    CpuBackend(CpuOptions(threads=1)).run(d.kernel, (w.astype(ml_dtypes.bfloat16), a.astype(ml_dtypes.bfloat16), out))
    want = np.einsum("nk,mk->mn", w, a).astype(ml_dtypes.bfloat16)   # integers |x| <= 128: exact in bf16
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))
    assert seen and all(pair == (Compact, Compact) for pair in seen), seen
