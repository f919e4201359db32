"""The `cpu` backend: executes the traced IR with the chip's exact semantics, bit for bit.

Modules: `layout` (buffer shapes and storage), `moves` (the logical-index move of
docs/machine/index.md), `adapters` (element-wise conversions), `contract` (the Contraction
Engine; `contract_fast`, `contract_plan` and `contract_float` its whole-contraction
path), `executor` (the op walk), `host` (host arrays in and out), `options` (how the
backend evaluates, `CpuOptions`).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from ir.diagnostic import Diagnostic
from ir.errors import CompileError

from backends.cpu import host
from backends.cpu.executor import execute
from backends.cpu.options import DEFAULT, CpuOptions

__all__ = ["CpuBackend", "CpuOptions", "execute"]


_TUPLE = object()
"""The key, beside the targets, of a kernel's `returns_tuple` answer in `CpuBackend._traces`."""


class CpuBackend:
    """Trace, refuse on any [T] error, then execute on numpy buffers (docs/testing.md).

    The trace of a kernel is kept per target for as long as the kernel object lives, so
    repeated `run` calls trace once (a trace reads no data)."""

    name = "cpu"
    executes = True

    def __init__(self, options: CpuOptions = DEFAULT) -> None:
        self.options = options
        self._traces: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()

    def _trace(self, kernel: Any, target: Any) -> Any:
        try:
            per_kernel = self._traces.setdefault(kernel, {})
            hash(target)
        except TypeError:  # not weak-referenceable or an unhashable target: no cache
            return kernel.trace(target)
        if target not in per_kernel:
            per_kernel[target] = kernel.trace(target)
        return per_kernel[target]

    def _returns_tuple(self, kernel: Any) -> bool:
        """`host.returns_tuple`, kept beside the kernel's traces (it reads the signature)."""
        try:
            per_kernel = self._traces.setdefault(kernel, {})
        except TypeError:
            return host.returns_tuple(kernel)
        if _TUPLE not in per_kernel:
            per_kernel[_TUPLE] = host.returns_tuple(kernel)
        return per_kernel[_TUPLE]

    def diagnostics(self, kernel: Any, target: str = "rngd") -> tuple[Diagnostic, ...]:
        """Every refusal and warning of the trace, in report order."""
        return kernel.trace(target).diagnostics

    def run(self, kernel: Any, arrays: Sequence[Any], target: str = "rngd") -> Any:
        """Results as host arrays: one array, a tuple (tuple annotation), or None."""
        result = self._trace(kernel, target)
        if result.errors:
            raise CompileError(result.errors)
        params = result.kernel.params
        host.check_count(kernel.name, params, arrays)
        buffers = [host.to_buffer(p, a) for p, a in zip(params, arrays)]
        ret = result.kernel.returns
        outputs = execute(result.kernel, buffers, self.options)
        values = tuple(host.from_buffer(buf, v.type) for buf, v in zip(outputs, ret.values)) if ret else ()
        if self._returns_tuple(kernel):
            return values
        return values[0] if values else None
