"""`npu_opt.run(..., numerics="reference")`: float contractions folded in furiosa-opt's
host order, one serial IEEE f32 sum per output cell (backends/cpu/contract.py `serial_fold`).

The oracle is written here with numpy alone: widen both operands as furiosa-opt's host
does (a bf16 subnormal reads as a zero of its sign, a NaN as 0x7FC00000, every other value
exactly: `Cast<f32> for bf16`, furiosa-opt-std/src/cast.rs and float/bf16.rs), then add the
products from +0.0 in contraction order, one rounded f32 addition at a time, keeping
whatever the products and sums are (no flush)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ir.errors import NpuOptError
from npu_opt.run import run
from tests.backends import kernels_small as k
from tests.kernel_files import example


def _host_widen(x: np.ndarray) -> np.ndarray:
    """bf16 -> f32 from the bit pattern: exponent 0 gives a zero of the sign, a NaN the
    quiet word 0x7FC00000, anything else the same bits in the upper half."""
    bits = np.asarray(x).view(np.uint16).astype(np.uint32)
    exponent, mantissa = (bits >> 7) & 0xFF, bits & 0x7F
    out = bits << 16
    out = np.where(exponent == 0, (bits & 0x8000) << 16, out)
    out = np.where((exponent == 0xFF) & (mantissa != 0), np.uint32(0x7FC00000), out)
    return out.astype(np.uint32).view(np.float32)


def _serial(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """sum_k x[i, k] * w[r, k], added left to right in f32 (no pairwise summation)."""
    xf, wf = _host_widen(x), _host_widen(w)
    acc = np.zeros((x.shape[0], w.shape[0]), np.float32)
    with np.errstate(all="ignore"):
        for kk in range(x.shape[1]):
            acc = acc + np.multiply.outer(xf[:, kk], wf[:, kk])
    return acc


def _bf16(rng: np.random.Generator, shape: tuple[int, ...], spread: float = 4.0) -> np.ndarray:
    """Values over several binades, so the order of the additions shows in the low bits."""
    v = rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape))
    return v.astype(ml_dtypes.bfloat16)


def test_reference_order_matches_a_serial_fold_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    x, w = _bf16(rng, (8, 64)), _bf16(rng, (8, 64))
    got = run(k.small_bf16, x, w, numerics="reference")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), _serial(x, w).view(np.uint32))


def test_reference_order_on_the_shipped_bf16_gemm() -> None:
    rng = np.random.default_rng(11)
    a, b = _bf16(rng, (512, 128)), _bf16(rng, (512, 128))
    kernel = example("gemm_bf16_kernel")
    ref = run(kernel, a, b, numerics="reference")
    np.testing.assert_array_equal(ref.view(np.uint32), _serial(a, b).view(np.uint32))
    chip = run(kernel, a, b)  # the chip's tree-then-time order rounds differently
    differ = np.count_nonzero(chip.view(np.uint32) != ref.view(np.uint32)) / chip.size
    assert differ > 0.05, f"only {differ:.1%} of the outputs differ: the two orders should disagree often"


def _with_subnormals(rng: np.random.Generator, shape: tuple[int, ...], share: float) -> np.ndarray:
    """bf16 values of both signs over the lowest normal binades (around 2^-118), `share` of
    them replaced by subnormals."""
    v = (_bf16(rng, shape).astype(np.float32) * np.float32(2.0**-118)).astype(ml_dtypes.bfloat16)
    tiny = rng.integers(1, 0x80, shape).astype(np.uint16) | (rng.integers(0, 2, shape).astype(np.uint16) << 15)
    pick = rng.random(shape) < share
    bits = np.where(pick, tiny, v.view(np.uint16))
    return bits.astype(np.uint16).view(ml_dtypes.bfloat16)


def test_reference_reads_subnormal_bf16_operands_as_signed_zero() -> None:
    x = np.zeros((8, 64), ml_dtypes.bfloat16)
    w = np.zeros((8, 64), ml_dtypes.bfloat16)
    tiny = np.array([1e-39], np.float32).astype(ml_dtypes.bfloat16)  # a bf16 subnormal
    x[0, 0], w[:, 0] = tiny[0], ml_dtypes.bfloat16(2.0**100)          # kept, the product would be normal
    x[1, 0], w[:, 1] = -tiny[0], ml_dtypes.bfloat16(-2.0**100)
    x[1, 1] = ml_dtypes.bfloat16(1.0)
    x.view(np.uint16)[2, 0] = 0x7F81                                  # a NaN with a payload
    ref = run(k.small_bf16, x, w, numerics="reference")
    assert np.all(ref[0] == 0)                                        # the subnormal read as +0
    assert np.all(ref[1] == np.float32(-2.0**100))                    # -0 + 1 * -2^100
    assert np.all(ref[2].view(np.uint32) == 0x7FC00000)               # read as the quiet NaN
    np.testing.assert_array_equal(ref.view(np.uint32), _serial(x, w).view(np.uint32))


def test_reference_on_subnormal_data_matches_the_host_bit_for_bit() -> None:
    """A gemm whose operands hold subnormals next to small normal values, against large
    weights, so that a subnormal read as its value would change the sums: every output
    equals the host's fold, which reads them as zeros."""
    rng = np.random.default_rng(5)
    a = _with_subnormals(rng, (512, 128), 0.25)
    b = (_bf16(rng, (512, 128)).astype(np.float32) * np.float32(2.0**100)).astype(ml_dtypes.bfloat16)
    ref = run(example("gemm_bf16_kernel"), a, b, numerics="reference")
    expected = _serial(a, b)
    np.testing.assert_array_equal(ref.view(np.uint32), expected.view(np.uint32))
    kept = a.astype(np.float32).astype(np.float64) @ b.astype(np.float64).T   # the subnormals as values
    assert np.count_nonzero(np.float32(kept) != expected) > ref.size // 4    # the data shows the difference


def test_integer_contractions_are_the_same_in_both_orders() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (8, 64), dtype=np.int8)
    chip = run(k.small_i8, x, w)
    ref = run(k.small_i8, x, w, numerics="reference")
    for c, r in zip(chip, ref):
        np.testing.assert_array_equal(c, r)
    np.testing.assert_array_equal(ref[0], x.astype(np.int64) @ w.astype(np.int64).T)


@pytest.mark.parametrize("backend", ["visa", "typecheck"])
def test_reference_numerics_is_a_cpu_option(backend: str) -> None:
    x = np.zeros((8, 64), ml_dtypes.bfloat16)
    with pytest.raises(NpuOptError, match="option of the cpu backend") as info:
        run(k.small_bf16, x, x, backend=backend, numerics="reference")
    assert info.value.code == "USAGE"


def test_the_dsl_and_the_backend_list_the_same_numerics() -> None:
    from backends.cpu.options import NUMERICS
    from npu_opt.run import NUMERICS as DSL_NUMERICS

    assert DSL_NUMERICS == NUMERICS


def test_unknown_numerics_is_usage() -> None:
    x = np.zeros((8, 64), ml_dtypes.bfloat16)
    with pytest.raises(NpuOptError, match="numerics='exact'") as info:
        run(k.small_bf16, x, x, numerics="exact")
    assert info.value.code == "USAGE"
