"""`npu_opt.run`: execute a kernel on numpy arrays with a backend (docs/getting-started.md, docs/testing.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ir.errors import NpuOptError
from npu_opt.device import DeviceKernel

if TYPE_CHECKING:
    from tu_ops.target import TargetLike

__all__ = ["run", "NUMERICS"]

NUMERICS = ("chip", "reference")
"""The values of `run(..., numerics=)`: `backends.cpu.options.NUMERICS`, which a test holds equal."""


def run(kernel: DeviceKernel, *arrays: Any, backend: str = "cpu", target: TargetLike = "rngd",
        numerics: str = "chip") -> Any:
    """Run `kernel` on host arrays and return its results, then its in-out arrays.

    Args:
        kernel: a `@device` kernel.
        *arrays: one argument per parameter after `ctx`: a numpy array for a tensor
            (one dimension per top-level term of its HBM element, padding left out), a
            tuple for a tuple parameter, an instance for an attrs / dataclass struct
            parameter. The array of an in-out parameter (`Mut[HbmTensor[...]]`,
            `HbmTensorViewMut[...]`) is its input and is written in place, like numpy's
            `out=`: it must be a writable, C-contiguous array of exactly the parameter's
            shape and one of its host dtypes.
        backend: `"cpu"` (the traced kernel, exactly) or `"visa"` (the compiled
            artifact in the VISA interpreter); both agree bit for bit.
        target: the target name or file.
        numerics: `"chip"` (the default: what the chip computes) or `"reference"`, an
            option of the cpu backend only: float contractions are folded in furiosa-opt's
            host order (one serial IEEE f32 sum per output cell, docs/numerics.md), so the
            expected values of a test ported from furiosa-opt match bit for bit.

    Returns:
        The results followed by the in-out arrays (the caller's own objects, now holding
        the final contents), in parameter order: one value alone, several as a tuple,
        None without any; a tuple return annotation always gives a tuple. bf16 / f8 / f4
        results are `ml_dtypes` arrays.

    Raises:
        CompileError: the kernel is refused (with `.diagnostics`), before any data is read.
        NpuOptError: code `USAGE` for an argument that does not fit its parameter (count,
            grouping, shape, dtype; an in-out array that is read-only or not C-contiguous),
            raised before anything runs: no caller array is touched.
    """
    if not isinstance(kernel, DeviceKernel):
        raise NpuOptError(f"run() takes a @device kernel, not {type(kernel).__name__}", code="USAGE")
    from backends import get_backend  # only the entry points reach the backends

    if numerics not in NUMERICS:
        raise NpuOptError(f"numerics={numerics!r}: expected one of {', '.join(map(repr, NUMERICS))}", code="USAGE")
    if numerics == "chip":
        return get_backend(backend).run(kernel, arrays, target=target)
    if backend != "cpu":
        raise NpuOptError(f"numerics={numerics!r} is an option of the cpu backend; the {backend!r} backend "
                          "computes what the chip computes (numerics='chip')", code="USAGE")
    return get_backend("cpu").run(kernel, arrays, target=target, numerics=numerics)
