"""The hand-written baselines of benchmarks/bench_synth.py (benchmarks/hand_kernels/) compute
what they claim: each, at its benchmark size on the cpu backend, equals an independent
numpy oracle (exact: i8 sums in int64, bf16 operands small integers whose f32 sums are
exact)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from driver.discover import load_file
from npu_opt import run

ROOT = Path(__file__).resolve().parents[2]
BF16 = np.dtype(ml_dtypes.bfloat16)


def _i8(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-128, 128, shape, dtype=np.int8)


def _bf16(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-8, 9, shape).astype(BF16)


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.int64 if x.dtype == np.int8 else np.float64)


def _gemm(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    return _wide(a) @ _wide(w).T


def _requant(a: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    x = (_gemm(a, w) + b).astype(np.int64)
    return np.clip(np.floor(x / 1024 + 0.5), 0, 127).astype(np.int8)


def _two_chips(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.stack([_gemm(a[c], w[c]) for c in range(2)])


# file, kernel, operands (from a generator), oracle, result dtype
CASES = [
    ("gemm_i8", "hand_gemm_i8", lambda r: [_i8(r, 512, 512), _i8(r, 512, 512)], _gemm, np.int32),
    ("gemm_bf16", "hand_gemm_bf16", lambda r: [_bf16(r, 512, 384), _bf16(r, 512, 384)], _gemm, np.float32),
    ("gemv", "hand_gemv", lambda r: [_i8(r, 4096, 4096), _i8(r, 4096)], lambda a, x: _wide(a) @ _wide(x), np.int32),
    ("gemv_k_split", "ref_gemv_i8", lambda r: [_i8(r, 4096, 4096), _i8(r, 4096)],
     lambda a, x: _wide(a) @ _wide(x), np.int32),
    ("batched", "hand_batched", lambda r: [_i8(r, 8, 128, 64), _i8(r, 8, 128, 64)],
     lambda a, w: np.einsum("bmk,bnk->bmn", _wide(a), _wide(w)), np.int32),
    # the host arrays padded with zeros (300 x 100 and 200 x 100 inside)
    ("padded", "hand_padded", lambda r: [np.pad(_i8(r, 300, 100), ((0, 20), (0, 28))),
                                         np.pad(_i8(r, 200, 100), ((0, 56), (0, 28)))], _gemm, np.int32),
    ("small", "hand_small", lambda r: [_bf16(r, 128, 256), _bf16(r, 128, 256)], _gemm, BF16),
    ("epilogue", "hand_epilogue", lambda r: [_i8(r, 512, 128), _i8(r, 512, 128),
                                             r.integers(-50_000, 50_000, 512, dtype=np.int32)], _requant, np.int8),
    ("pe2", "hand_pe2", lambda r: [_i8(r, 256, 128), _i8(r, 256, 128)], _gemm, np.int32),
    ("two_chips", "hand_two_chips", lambda r: [_i8(r, 2, 512, 128), np.stack([_i8(r, 512, 128)] * 2)], _two_chips,
     np.int32),
    ("narrow", "hand_narrow", lambda r: [_i8(r, 1024, 256), _i8(r, 64, 256)], _gemm, np.int32),
]


@pytest.mark.parametrize("file, name, operands, oracle, dtype", CASES, ids=[c[0] for c in CASES])
def test_a_hand_kernel_equals_numpy_on_cpu(file: str, name: str, operands, oracle, dtype) -> None:
    module, error = load_file(ROOT / "benchmarks" / "hand_kernels" / f"{file}.py")
    assert error is None, error
    ops = operands(np.random.default_rng(5))
    got = np.asarray(run(getattr(module, name), *ops, backend="cpu"))
    want = np.asarray(oracle(*ops)).astype(dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
