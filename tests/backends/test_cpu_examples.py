"""Every example of examples/ on the cpu backend against its numpy oracle: integers
exact; floats bit-exact against the `*_oracle_exact` hardware-order oracle and within the
float tolerance of exact math."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from npu_opt.run import run
from tests.backends import oracles as o
from tests.backends.examples import bf16_uniform, example, i8_uniform


def _f64(bits: np.ndarray) -> np.ndarray:
    return o.bf16_bits_to_f32(bits).astype(np.float64)


def _bf16_result(out: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    assert out.dtype == np.dtype(ml_dtypes.bfloat16)
    assert out.shape == shape
    return out.view(np.uint16)


def test_dot_product() -> None:
    rng = np.random.default_rng(1)
    lhs, rhs = bf16_uniform(rng, 2048), bf16_uniform(rng, 2048)
    out = _bf16_result(run(example("dot_product", "dot_product_kernel"), lhs, rhs), (1,))
    np.testing.assert_array_equal(out, o.dot_oracle_exact(lhs, rhs))
    assert o.float_tolerance_ok(out, _f64(lhs)[None, :], _f64(rhs)[None, :], 2048)


def test_gemv() -> None:
    rng = np.random.default_rng(2)
    mat, vec = bf16_uniform(rng, (256, 2048)), bf16_uniform(rng, 2048)
    out = _bf16_result(run(example("gemv", "gemv_kernel"), mat, vec), (256,))
    np.testing.assert_array_equal(out, o.gemv_oracle_exact(mat, vec))
    assert o.float_tolerance_ok(out, _f64(mat), _f64(vec)[None, :], 2048)


def test_gemm_bf16_to_bf16() -> None:
    rng = np.random.default_rng(3)
    a, b = bf16_uniform(rng, (512, 64)), bf16_uniform(rng, (512, 64))
    out = _bf16_result(run(example("gemm", "gemm_kernel"), a, b), (512, 512))
    np.testing.assert_array_equal(out, o.gemm_oracle_exact(a, b))
    assert o.float_tolerance_ok(out, _f64(a)[:, None, :], _f64(b)[None, :, :], 64)


def test_gemm_i8() -> None:
    rng = np.random.default_rng(4)
    a, w = i8_uniform(rng, (512, 128)), i8_uniform(rng, (512, 128))
    out = run(example("gemm_i8", "gemm_i8_kernel"), a, w)
    assert out.dtype == np.int32 and out.shape == (512, 512)
    np.testing.assert_array_equal(out, o.gemm_i8_oracle(a, w))


def test_gemm_bf16_to_f32() -> None:
    rng = np.random.default_rng(5)
    a, w = bf16_uniform(rng, (512, 128)), bf16_uniform(rng, (512, 128))
    out = run(example("gemm_bf16", "gemm_bf16_kernel"), a, w)
    assert out.dtype == np.float32 and out.shape == (512, 512)
    np.testing.assert_array_equal(out.view(np.uint32), o.gemm_bf16_oracle_exact(a, w).view(np.uint32))
    assert o.float_tolerance_ok(out, _f64(a)[:, None, :], _f64(w)[None, :, :], 128)


@pytest.mark.parametrize("weights", ["ones", "random"])
def test_row_sum(weights: str) -> None:
    rng = np.random.default_rng(6)
    x = i8_uniform(rng, (2048, 128))
    w = np.ones(128, np.int8) if weights == "ones" else i8_uniform(rng, 128)
    out = run(example("row_sum", "row_sum_kernel"), x, w)
    assert out.dtype == np.int32 and out.shape == (2048,)
    np.testing.assert_array_equal(out, o.row_sum_oracle(x, w))


def test_widening_copy() -> None:
    rng = np.random.default_rng(7)
    x = i8_uniform(rng, (4096, 8))
    out = run(example("widening_copy", "fetch_commit_simple"), x)
    assert out.dtype == np.int32 and out.shape == (8, 4096)
    np.testing.assert_array_equal(out, o.fetch_commit_oracle(x))


def test_ml_dtypes_input_gives_the_same_bits() -> None:
    """bf16 may be passed as ml_dtypes.bfloat16 or as uint16 bit patterns (docs/numerics.md)."""
    rng = np.random.default_rng(8)
    lhs, rhs = bf16_uniform(rng, 2048), bf16_uniform(rng, 2048)
    kernel = example("dot_product", "dot_product_kernel")
    as_bits = run(kernel, lhs, rhs)
    as_bf16 = run(kernel, lhs.view(ml_dtypes.bfloat16), rhs.view(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(as_bits.view(np.uint16), as_bf16.view(np.uint16))
