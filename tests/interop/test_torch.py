"""`npu_opt.torch.op`: a kernel as a PyTorch custom operator (docs/frameworks.md).

Every expected value comes from numpy (an independent oracle) or from `npu_opt.run` on the
same arrays (the op must equal it bit for bit)."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from tests.optional_deps import Deferred, need

need("torch", "torch")

import npu_opt  # noqa: E402
from ir.errors import CompileError, NpuOptError  # noqa: E402
from tests.interop import kernels  # noqa: E402

# imported when a test first reads them, not at collection (tests/optional_deps.Deferred)
torch = Deferred("torch")
npu_torch = Deferred("npu_opt.torch")
fake_tensor = Deferred("torch._subclasses.fake_tensor")

RNG = np.random.default_rng(57)


def _bf16(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.standard_normal(shape).astype(ml_dtypes.bfloat16)


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()


@pytest.mark.parametrize("backend", ["cpu", "visa"])
def test_bf16_tuple_results_equal_run_and_numpy(backend: str) -> None:
    x = _bf16((64, 32))
    op = npu_torch.op(kernels.bf16_twice, backend=backend)
    t = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    rows, cols = op(t)
    assert rows.dtype == cols.dtype == torch.bfloat16
    assert (rows.shape, cols.shape) == ((64, 32), (32, 64))
    assert np.array_equal(_bits(rows), x.view(np.int16))
    assert np.array_equal(_bits(cols), x.T.view(np.int16))
    want = npu_opt.run(kernels.bf16_twice, x, backend=backend)
    assert np.array_equal(_bits(cols), want[1].view(np.int16))


def test_the_op_reads_the_callers_memory_without_a_copy() -> None:
    t = torch.from_numpy(_bf16((64, 32)).view(np.int16)).view(torch.bfloat16)
    array, shared = npu_torch._to_numpy(t, npu_opt.host_signature.host_signature(kernels.bf16_twice).args[0])
    assert shared and np.shares_memory(array, t.view(torch.int16).numpy())
    strided = torch.zeros(32, 64, dtype=torch.bfloat16).t()
    _, shared = npu_torch._to_numpy(strided, npu_opt.host_signature.host_signature(kernels.bf16_twice).args[0])
    assert not shared


@pytest.mark.parametrize("contiguous", [True, False])
def test_inout_tensor_is_written_in_place_with_scalars(contiguous: bool) -> None:
    base = np.arange(8 * 16, dtype=np.int32).reshape(8, 16)
    cache = torch.from_numpy(base.copy())
    if not contiguous:  # a transposed view of a (16, 8) buffer: written back after the launch
        holder = torch.from_numpy(np.ascontiguousarray(base.T))
        cache = holder.t()
    op = npu_torch.op(kernels.i32_page_copy)
    assert op(cache, 2, 5) is None
    want = base.copy()
    want[5] = base[2]
    assert np.array_equal(cache.numpy() if contiguous else cache.contiguous().numpy(), want)


def test_inout_is_declared_mutated_in_the_schema() -> None:
    op = npu_torch.op(kernels.i32_page_copy)
    schema = str(op._opoverload._schema)
    assert "Tensor(a!) cache" in schema and "int src" in schema and schema.endswith("-> ()")


def test_same_kernel_gives_the_same_op() -> None:
    assert npu_torch.op(kernels.bf16_twice) is npu_torch.op(kernels.bf16_twice)
    assert npu_torch.op(kernels.bf16_twice) is not npu_torch.op(kernels.bf16_twice, backend="visa")


def test_torch_compile_of_a_module_that_calls_the_op() -> None:
    op = npu_torch.op(kernels.bf16_twice)

    class Block(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            rows, cols = op(x * 2)
            return rows.float().sum(dim=1) + cols.float().sum(dim=0)

    x = torch.from_numpy(_bf16((64, 32)).view(np.int16)).view(torch.bfloat16)
    eager = Block()(x)
    compiled = torch.compile(Block(), backend="aot_eager", fullgraph=True)(x)
    assert torch.equal(eager, compiled)
    want = (x.float().numpy() * 2).sum(axis=1) * 2
    assert np.allclose(compiled.numpy(), want, rtol=1e-2, atol=1e-1)


def test_fx_tracing_uses_the_fake_implementation_only() -> None:
    op = npu_torch.op(kernels.bf16_twice)
    with fake_tensor.FakeTensorMode():
        x = torch.empty(64, 32, dtype=torch.bfloat16)
        rows, cols = op(x)
    assert (tuple(rows.shape), tuple(cols.shape), rows.dtype) == ((64, 32), (32, 64), torch.bfloat16)


def test_torch_compile_functionalizes_the_inout_write() -> None:
    op = npu_torch.op(kernels.i32_page_copy)

    def step(cache: torch.Tensor) -> torch.Tensor:
        op(cache, 0, 7)
        return cache.sum()

    cache = torch.arange(128, dtype=torch.int32).reshape(8, 16)
    total = torch.compile(step, backend="aot_eager", fullgraph=True)(cache)
    want = np.arange(128, dtype=np.int64).reshape(8, 16)
    want[7] = want[0]
    assert np.array_equal(cache.numpy(), want) and int(total) == int(want.sum())


def test_a_refused_kernel_raises_its_code_when_the_op_is_made() -> None:
    with pytest.raises(CompileError) as e:
        npu_torch.op(kernels.refused_copy)
    assert e.value.code == "DMA-3"


def test_a_launch_error_carries_its_code() -> None:
    op = npu_torch.op(kernels.i32_page_copy)
    cache = torch.zeros(8, 16, dtype=torch.int32)
    with pytest.raises(NpuOptError) as e:
        op(cache, 8, 0)  # page 8 of 8
    assert e.value.code == "RUNTIME-10"
    assert not cache.any()  # refused before the copy


def test_a_tensor_of_another_dtype_is_a_usage_error() -> None:
    op = npu_torch.op(kernels.bf16_twice)
    with pytest.raises(NpuOptError) as e:
        op(torch.zeros(64, 32, dtype=torch.float32))
    assert e.value.code == "USAGE" and "bfloat16" in str(e.value)


def test_an_unknown_backend_is_a_usage_error() -> None:
    with pytest.raises(NpuOptError) as e:
        npu_torch.op(kernels.bf16_twice, backend="npu")
    assert e.value.code == "USAGE"


def test_import_npu_opt_imports_neither_framework() -> None:
    code = ("import sys, npu_opt; from npu_opt import *; import npu_opt.host_signature; "
            "print(sorted(m for m in ('torch', 'jax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


TORCH_DTYPES = {"i8": "int8", "u8": "uint8", "i16": "int16", "i32": "int32", "f32": "float32",
                "bf16": "bfloat16", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}
"""npu-opt's dtype -> the name of torch's."""


@pytest.mark.parametrize("name", sorted(kernels.COPIES))
def test_every_dtype_crosses_bit_for_bit(name: str) -> None:
    tdtype = getattr(torch, TORCH_DTYPES[name])
    width = torch.empty(0, dtype=tdtype).element_size()
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[width]
    raw = RNG.integers(0, 256, (64, 32 * width), dtype=np.uint8)
    if name.startswith(("f", "bf")):  # finite floats only: NaN payloads need not survive a copy
        raw = raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[width])
        raw = raw & {1: 0xB7, 2: 0xBF7F, 4: 0xBF7FFFFF}[width]  # clear an exponent bit: no inf or NaN
        raw = raw.view(np.uint8)
    x = torch.from_numpy(raw.copy()).view(tdtype).reshape(64, 32)
    y = npu_torch.op(kernels.COPIES[name])(x)
    assert y.dtype == tdtype and torch.equal(y.view(bits), x.view(bits))


def test_a_write_view_parameter_is_written_in_place_beside_a_result() -> None:
    x = torch.arange(128, dtype=torch.int32).reshape(8, 16)
    out = torch.full((8, 16), -1, dtype=torch.int32)
    op = npu_torch.op(kernels.i32_into_view)
    assert "Tensor(a!) out" in str(op._opoverload._schema)
    result = op(x, out)
    assert torch.equal(result, x) and torch.equal(out, x)
