"""`npu_opt.run(..., numerics="reference")`: float contractions folded in furiosa-opt's
host order, one serial IEEE f32 sum per output cell (backends/cpu/contract_serial.py).

The oracle is written here with numpy alone: widen both operands exactly, then add the
products from +0.0 in contraction order, one rounded f32 addition at a time."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ir.errors import NpuOptError
from npu_opt.run import run
from tests.backends import kernels_small as k
from tests.kernel_files import example


def _serial(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """sum_k x[i, k] * w[r, k], added left to right in f32 (no pairwise summation)."""
    xf, wf = x.astype(np.float32), w.astype(np.float32)
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


def test_reference_keeps_subnormal_operands_the_chip_flushes() -> None:
    x = np.zeros((8, 64), ml_dtypes.bfloat16)
    w = np.zeros((8, 64), ml_dtypes.bfloat16)
    tiny = np.array([1e-39], np.float32).astype(ml_dtypes.bfloat16)  # a bf16 subnormal
    x[0, 0], w[:, 0] = tiny[0], ml_dtypes.bfloat16(2.0)
    ref = run(k.small_bf16, x, w, numerics="reference")
    chip = run(k.small_bf16, x, w)
    assert np.all(ref[0] == np.float32(tiny[0].astype(np.float32)) * np.float32(2.0)) and ref[0, 0] != 0
    assert np.all(chip[0] == 0)  # the Contraction Engine flushes subnormal operands
    np.testing.assert_array_equal(ref.view(np.uint32), _serial(x, w).view(np.uint32))


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
