"""The interpreter on a batched bf16 GEMM (tests/visa/kernels_batched_small.py): every row
reads weights of its own, so the exact kernel lays each row's weights out itself and finds
the stream codes' range as it widens them, assuming the sum exact (`contract_jit._scanned`).
The results equal the cpu backend's and the independent oracle's bit for bit, whether that
assumption holds (ordinary values) or not (a subnormal or a NaN among the codes: the usual
path runs instead)."""

from __future__ import annotations

import numpy as np
import pytest

import npu_opt
from tests.visa import kernels_batched_small as k
from visa.interp.fast import contract_jit as interp_jit


@pytest.fixture(autouse=True)
def _numba() -> None:
    """numba, or the test skips: asked here, not at the top, so that collecting this file
    does not load numba in every worker (which makes every float contraction there compile)."""
    pytest.importorskip("numba")


B, M, N, K = 256, 8, 16, 64


def _oracle(a16: np.ndarray, w16: np.ndarray) -> np.ndarray:
    """out[m, n] of one problem in the engine's order: per time step (32 consecutive K), the
    32 float32 products summed by the adder tree (adjacent pairs, level by level), the steps
    added to +0 in order; every operation a float32 one."""
    a = (a16.astype(np.uint32) << 16).view(np.float32)
    w = (w16.astype(np.uint32) << 16).view(np.float32)
    prod = (a[:, None, :] * w[None, :, :]).astype(np.float32).reshape(M, N, K // 32, 32)
    while prod.shape[-1] > 1:
        prod = (prod[..., 0::2] + prod[..., 1::2]).astype(np.float32)
    acc = np.zeros((M, N), np.float32)
    for step in range(K // 32):
        acc = (acc + prod[:, :, step, 0]).astype(np.float32)
    return acc


def _inputs(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(len(kind))
    a = rng.uniform(-1, 1, (B, M, K)).astype(np.float32)
    w = rng.uniform(-1, 1, (B, N, K)).astype(np.float32)
    bits = lambda x: (x.view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731 -- truncated to bf16
    a16, w16 = bits(a), bits(w)
    if kind == "subnormal":
        a16[7, 3, :] = 0x0003          # bf16 subnormals: their products are flushed to zero
    if kind == "nan":
        w16[200, 1, 9] = 0x7FC1
    return a16, w16


@pytest.mark.parametrize("kind, assumed", [("normal", True), ("subnormal", False), ("nan", False)])
def test_a_batched_gemm_equals_the_cpu_backend_and_the_oracle(monkeypatch, kind, assumed):
    a, w = _inputs(kind)
    seen = []
    real = interp_jit._scanned
    monkeypatch.setattr(interp_jit, "_scanned", lambda *args: seen.append(real(*args)) or seen[-1])
    got = npu_opt.run(k.batched_small_bf16, a, w, backend="visa")
    cpu = npu_opt.run(k.batched_small_bf16, a, w, backend="cpu")
    assert len(seen) == 1 and (seen[0] is not None) is assumed     # the speculation ran, and held or not
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), np.asarray(cpu).view(np.uint32))
    if kind == "normal":
        for b in (0, 99, 255):
            np.testing.assert_array_equal(np.asarray(got)[b].view(np.uint32), _oracle(a[b], w[b]).view(np.uint32))
