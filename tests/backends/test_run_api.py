"""`npu_opt.run` and the backend registry: refusals before data, argument validation
naming the parameter, unknown and non-executing backends."""

from __future__ import annotations

import numpy as np
import pytest

from backends import BACKENDS, Backend
from ir.errors import CompileError, NpuOptError
from npu_opt.run import run
from tests.backends import kernels_small as k
from tests.backends.examples import FIXTURES, load


def test_registry_holds_typecheck_and_cpu() -> None:
    assert {"typecheck", "cpu"} <= set(BACKENDS)
    for name, backend in BACKENDS.items():
        assert isinstance(backend, Backend) and backend.name == name


def test_refused_kernel_raises_before_touching_data() -> None:
    kernel = load(FIXTURES / "refused.py").r01_half_flit
    with pytest.raises(CompileError) as info:
        run(kernel, "not an array", 42)  # wrong count and type: the refusal comes first
    assert info.value.diagnostics and info.value.diagnostics[0].code == "COLLECT-2"
    assert info.value.code == "COLLECT-2"


def test_typecheck_backend_reports_without_running() -> None:
    kernel = load(FIXTURES / "refused.py").r01_half_flit
    codes = [d.code for d in BACKENDS["typecheck"].diagnostics(kernel)]
    assert codes == ["COLLECT-2"]
    with pytest.raises(NpuOptError) as info:
        run(k.small_i8, np.zeros((16, 64), np.int8), np.zeros((8, 64), np.int8), backend="typecheck")
    assert info.value.code == "USAGE"


def test_unknown_backend_is_usage() -> None:
    with pytest.raises(NpuOptError, match="unknown backend 'gpu'") as info:
        run(k.small_i8, backend="gpu")
    assert info.value.code == "USAGE"


def _usage(*arrays: object) -> NpuOptError:
    with pytest.raises(NpuOptError) as info:
        run(k.small_bf16, *arrays)
    assert info.value.code == "USAGE"
    return info.value


def test_wrong_count_lists_the_parameters() -> None:
    err = _usage(np.zeros((8, 64), np.uint16))
    assert "takes 2 array(s) (x, w), got 1" in str(err)


def test_wrong_shape_names_the_parameter() -> None:
    err = _usage(np.zeros((8, 64), np.uint16), np.zeros((64, 8), np.uint16))
    assert "`w`" in str(err) and "(8, 64)" in str(err)


def test_wrong_dtype_names_the_parameter() -> None:
    err = _usage(np.zeros((8, 64), np.float32), np.zeros((8, 64), np.uint16))
    assert "`x`" in str(err) and "bf16" in str(err)


def test_not_an_array_names_the_parameter() -> None:
    err = _usage(np.zeros((8, 64), np.uint16), [[0] * 64] * 8)
    assert "`w`" in str(err) and "list" in str(err)


def test_int_dtype_must_be_the_host_dtype() -> None:
    with pytest.raises(NpuOptError, match="`x` is i8") as info:
        run(k.small_i8, np.zeros((16, 64), np.int64), np.zeros((8, 64), np.int8))
    assert info.value.code == "USAGE"


def test_not_a_kernel_is_usage() -> None:
    with pytest.raises(NpuOptError) as info:
        run(lambda: None)
    assert info.value.code == "USAGE"


def test_a_parameter_read_in_place_is_never_written_and_results_are_copies():
    """A one-chip parameter without padding is read straight from the caller's array (a
    read-only view, no copy); the run leaves the array as it was and returns its own array."""
    import numpy as np

    from backends.cpu import CpuBackend
    from tests.kernel_files import example

    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    w = rng.integers(-128, 128, (512, 128), dtype=np.int8)
    kept = a.copy(), w.copy()
    got = CpuBackend().run(example("gemm_i8_kernel"), (a, w))
    assert np.array_equal(a, kept[0]) and np.array_equal(w, kept[1])
    assert a.flags.writeable and w.flags.writeable
    assert not np.shares_memory(got, a) and not np.shares_memory(got, w)
    np.testing.assert_array_equal(got, (a.astype(np.int64) @ w.astype(np.int64).T).astype(np.int32))
