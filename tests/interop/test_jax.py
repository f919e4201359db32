"""`npu_opt.jax.op`: a kernel as a JAX function (docs/frameworks.md), checked against numpy
and against `npu_opt.run` on the same arrays."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.optional_deps import Deferred, need

need("jax", "jax")

import npu_opt  # noqa: E402
from ir.errors import CompileError, NpuOptError  # noqa: E402
from tests.interop import kernels  # noqa: E402

# imported when a test first reads them, not at collection (tests/optional_deps.Deferred)
jax = Deferred("jax")
jnp = Deferred("jax.numpy")
npu_jax = Deferred("npu_opt.jax")

RNG = np.random.default_rng(570)


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_bf16_results_under_jit(backend: str) -> None:
    x = RNG.standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    f = jax.jit(npu_jax.op(kernels.bf16_twice, backend=backend))
    rows, cols = f(jnp.asarray(x))
    assert rows.dtype == jnp.bfloat16 and cols.shape == (32, 64)
    assert np.array_equal(np.asarray(rows).view(np.int16), x.view(np.int16))
    assert np.array_equal(np.asarray(cols).view(np.int16), x.T.view(np.int16))
    want = npu_opt.run(kernels.bf16_twice, x, backend=backend)
    assert np.array_equal(np.asarray(cols).view(np.int16), want[1].view(np.int16))


def test_inout_comes_back_as_an_output_and_the_input_is_unchanged() -> None:
    base = np.arange(128, dtype=np.int32).reshape(8, 16)
    cache = jnp.asarray(base)
    f = jax.jit(npu_jax.op(kernels.i32_page_copy))
    final = f(cache, 3, 1)
    want = base.copy()
    want[1] = base[3]
    assert np.array_equal(np.asarray(final), want)
    assert np.array_equal(np.asarray(cache), base)  # JAX arrays are values


def test_traced_scalars_reach_the_kernel() -> None:
    f = jax.jit(npu_jax.op(kernels.i32_page_copy))
    base = np.arange(128, dtype=np.int32).reshape(8, 16)
    for src, dst in ((0, 7), (6, 2)):
        want = base.copy()
        want[dst] = base[src]
        assert np.array_equal(np.asarray(f(jnp.asarray(base), jnp.uint32(src), jnp.uint32(dst))), want)


def test_vmap_runs_one_launch_per_element() -> None:
    f = jax.vmap(npu_jax.op(kernels.bf16_twice))
    xs = RNG.standard_normal((3, 64, 32)).astype(ml_dtypes.bfloat16)
    rows, cols = f(jnp.asarray(xs))
    assert rows.shape == (3, 64, 32) and cols.shape == (3, 32, 64)
    assert np.array_equal(np.asarray(cols).view(np.int16), xs.transpose(0, 2, 1).view(np.int16))


def test_a_refused_kernel_raises_when_the_function_is_made() -> None:
    with pytest.raises(CompileError) as e:
        npu_jax.op(kernels.refused_copy)
    assert e.value.code == "DMA-3"


def test_a_wrong_shape_is_a_usage_error_naming_the_parameter() -> None:
    f = npu_jax.op(kernels.bf16_twice)
    with pytest.raises(NpuOptError) as e:
        f(jnp.zeros((32, 64), jnp.bfloat16))
    assert e.value.code == "USAGE" and "`x`" in str(e.value)


def test_a_launch_error_carries_its_code() -> None:
    f = npu_jax.op(kernels.i32_page_copy)
    cache = jnp.zeros((8, 16), jnp.int32)
    with pytest.raises(NpuOptError) as e:  # eagerly: npu-opt's own error
        f(cache, 9, 0)
    assert e.value.code == "RUNTIME-10"
    with pytest.raises(jax.errors.JaxRuntimeError) as e:  # under jit: JAX's, with the code in its text
        jax.block_until_ready(jax.jit(f)(cache, 9, 0))
    assert "RUNTIME-10: " in str(e.value)


def test_a_write_view_parameter_comes_back_after_the_result() -> None:
    x = np.arange(128, dtype=np.int32).reshape(8, 16)
    result, out = jax.jit(npu_jax.op(kernels.i32_into_view))(jnp.asarray(x), jnp.full((8, 16), -1, jnp.int32))
    assert np.array_equal(np.asarray(result), x) and np.array_equal(np.asarray(out), x)
