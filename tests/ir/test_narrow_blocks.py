"""`ir.float_bits.narrow_bf16` and `commit_cast_relu` cast a block at a time with the rounding
bit trick (issue 61): every bf16 upper half with each rounding-critical lower half, and
arrays spanning many blocks, against ml_dtypes' round-to-nearest-even for the values it
rounds as the spec does and docs/numerics.md 4.1 / 4.4 for the rest (a subnormal to its
signed zero, every NaN to 0x7FC0); the temporaries stay block-sized."""

from __future__ import annotations

import tracemalloc

import ml_dtypes
import numpy as np
import pytest

from ir.float_bits import commit_cast_relu, narrow_bf16

LOWER = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x4000, 0xC000], np.uint32)


def _oracle(bits: np.ndarray, relu: bool) -> np.ndarray:
    """The spec's cast from ml_dtypes (RNE on every non-NaN value it does not keep
    subnormal) plus the spec's special cases, written independently of the code."""
    flat = bits.reshape(-1)
    mag = flat & 0x7FFFFFFF
    nan, sub = mag > 0x7F800000, (mag != 0) & (mag < 0x00800000)
    plain = np.where(nan | sub, 0, flat).view(np.float32)
    out = plain.astype(ml_dtypes.bfloat16).view(np.uint16).copy()
    out[sub] = (flat[sub] >> 31).astype(np.uint16) << 15
    out[nan] = 0x7FC0
    if relu:
        out[(flat >> 31 == 1) & ~nan] = 0
    return out.reshape(bits.shape)


def _every_case() -> np.ndarray:
    upper = np.arange(1 << 16, dtype=np.uint32)
    return ((upper[:, None] << 16) | LOWER).reshape(-1)   # every sign, exponent, kept significand


@pytest.mark.parametrize("relu", [False, True])
def test_every_upper_half_with_each_critical_lower_half(relu):
    bits = _every_case().reshape(-1, 8)[:, ::-1]    # not contiguous; many blocks, odd cells in each
    got = (commit_cast_relu if relu else narrow_bf16)(bits)
    assert got.dtype == np.uint16 and got.shape == bits.shape
    assert np.array_equal(got, _oracle(np.ascontiguousarray(bits), relu))


def test_a_partial_last_block_and_scalars():
    rng = np.random.default_rng(61)
    bits = rng.integers(0, 1 << 32, 3 * (1 << 15) + 17, dtype=np.uint32)
    for relu, cast in ((False, narrow_bf16), (True, commit_cast_relu)):
        assert np.array_equal(cast(bits), _oracle(bits, relu))
        assert cast(np.uint32(0x3F818000)).shape == () and int(cast(np.uint32(0x3F818000))) == 0x3F82
        assert cast(np.zeros(0, np.uint32)).shape == (0,)


def test_temporaries_stay_block_sized():
    bits = np.full(1 << 20, 0x3F808000, np.uint32)
    tracemalloc.start()
    try:
        out = narrow_bf16(bits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the 2 MiB result and a few 128 KiB blocks; the case-by-case rule held 4 MiB arrays
    assert peak < out.nbytes + (1 << 20)
