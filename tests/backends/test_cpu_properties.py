"""Hypothesis tests of the cpu backend on small kernels (tests/backends/kernels_small.py):
special floats (NaN, infinities, subnormals, signed zeros, extremes) and extreme integers,
against oracles written here from the spec's arithmetic (docs/testing.md helpers)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from npu_opt.run import run
from tests.backends import kernels_small as k
from tests.backends import oracles as o

BF16_SPECIAL = [
    0x0000, 0x8000,            # signed zeros
    0x0001, 0x007F, 0x8001,    # subnormals (flushed on widening)
    0x0080, 0x8080,            # smallest normals
    0x7F7F, 0xFF7F,            # largest finite
    0x7F80, 0xFF80,            # infinities
    0x7FC0, 0x7F81, 0xFFC1,    # NaNs with any sign and payload
    0x3F80, 0xBF80, 0x2000,    # 1, -1, 2^-63 (products underflow)
]
I8_EXTREME = [-128, -127, -1, 0, 1, 126, 127]

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bf16_arrays(shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    element = st.one_of(st.sampled_from(BF16_SPECIAL), st.integers(0, 0xFFFF))
    return hnp.arrays(np.uint16, shape, elements=element)


def i8_arrays(shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    element = st.one_of(st.sampled_from(I8_EXTREME), st.integers(-128, 127))
    return hnp.arrays(np.int8, shape, elements=element)


def small_bf16_oracle(x_bits: np.ndarray, w_bits: np.ndarray) -> np.ndarray:
    """y[i, r]: products in f32, tree over K % 32, then the two K / 32 steps from +0."""
    x, w = o.bf16_bits_to_f32(x_bits), o.bf16_bits_to_f32(w_bits)
    prod = o.fmul(x[:, None, :], w[None, :, :]).reshape(8, 8, 2, 32)
    return o.time_sum(o.tree_sum(prod))


@SETTINGS
@given(x=bf16_arrays((8, 64)), w=bf16_arrays((8, 64)))
def test_bf16_contraction_is_bit_exact(x: np.ndarray, w: np.ndarray) -> None:
    out = run(k.small_bf16, x, w)
    assert out.dtype == np.float32 and out.shape == (8, 8)
    np.testing.assert_array_equal(out.view(np.uint32), small_bf16_oracle(x, w).view(np.uint32))


def _wrap(values: np.ndarray, bits: int) -> np.ndarray:
    half = 1 << (bits - 1)
    return (values + half) % (1 << bits) - half


@SETTINGS
@given(x=i8_arrays((16, 64)), w=i8_arrays((8, 64)))
def test_i8_contractions_are_exact(x: np.ndarray, w: np.ndarray) -> None:
    y, z = run(k.small_i8, x, w)
    x64, w64 = x.astype(np.int64), w.astype(np.int64)
    assert y.dtype == np.int32 and y.shape == (16, 8)
    np.testing.assert_array_equal(y, _wrap(x64 @ w64.T, 32))
    shifted = np.einsum("ae,ne->n", x64 - k.ZERO_POINT, w64)  # i9 operands, A summed in time
    assert z.dtype == np.int8 and z.shape == (8,)
    np.testing.assert_array_equal(z, _wrap(_wrap(shifted, 32), 8))


def test_flush_and_order_cases() -> None:
    """docs/numerics.md: a product below 2^-126 flushes; a flushed operand gives zero; the
    accumulator starts at +0, so -0 products give +0; inf - inf is the canonical NaN."""
    x = np.zeros((8, 64), np.uint16)
    w = np.zeros((8, 64), np.uint16)
    x[0, 0], w[0, 0] = 0x1F80, 0x2000      # 2^-64 * 2^-63 = 2^-127: flushed
    x[1, 0], w[1, 0] = 0x0001, 0x3F80      # subnormal operand flushed on widening
    x[2, :], w[2, :] = 0x8000, 0x3F80      # every product is -0
    x[3, 0], w[3, 0] = 0x7F80, 0x3F80      # +inf in the first half of K ...
    x[3, 32], w[3, 32] = 0xFF80, 0x3F80    # ... -inf in the second: NaN in time
    out = run(k.small_bf16, x, w).view(np.uint32)
    assert out[0, 0] == 0 and out[1, 0] == 0 and out[2, 2] == 0
    assert out[3, 3] == 0x7FC00000
    np.testing.assert_array_equal(out, small_bf16_oracle(x, w).view(np.uint32))


def test_kernel_without_results_returns_none() -> None:
    assert run(k.load_only, np.zeros((8, 64), np.int8)) is None
