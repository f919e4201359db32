"""`npu_opt.run`: execute a kernel on numpy arrays with a backend (docs/getting-started.md, docs/testing.md)."""

from __future__ import annotations

from typing import Any

from ir.errors import NpuOptError

__all__ = ["run"]


def run(kernel: Any, *arrays: Any, backend: str = "cpu", target: str = "rngd") -> Any:
    """Run `kernel` on host arrays, one per parameter, and return its result(s).

    The result is one numpy array, a tuple of them when the return annotation is a tuple,
    or None for a kernel without results. bf16 / f8 / f4 results are `ml_dtypes` arrays.
    A refused kernel raises `CompileError` (with `.diagnostics`) before any data is read;
    a wrong argument count, shape or dtype raises `NpuOptError` with code `USAGE`.
    """
    from npu_opt.device import DeviceKernel

    if not isinstance(kernel, DeviceKernel):
        raise NpuOptError(f"run() takes a @device kernel, not {type(kernel).__name__}", code="USAGE")
    from backends import get_backend  # only the entry points reach the backends

    return get_backend(backend).run(kernel, arrays, target=target)
