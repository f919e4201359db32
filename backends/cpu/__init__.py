"""The `cpu` backend: executes the traced IR with the chip's exact semantics, bit for bit.

Modules: `layout` (buffer shapes and storage), `moves` (the logical-index move of
docs/machine/index.md), `adapters` (element-wise conversions), `contract` (the Contraction
Engine), `executor` (the op walk), `host` (host arrays in and out).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ir.diagnostic import Diagnostic
from ir.errors import CompileError

from backends.cpu import host
from backends.cpu.executor import execute

__all__ = ["CpuBackend", "execute"]


class CpuBackend:
    """Trace, refuse on any [T] error, then execute on numpy buffers (docs/testing.md)."""

    name = "cpu"
    executes = True

    def diagnostics(self, kernel: Any, target: str = "rngd") -> tuple[Diagnostic, ...]:
        """Every refusal and warning of the trace, in report order."""
        return kernel.trace(target).diagnostics

    def run(self, kernel: Any, arrays: Sequence[Any], target: str = "rngd") -> Any:
        """Results as host arrays: one array, a tuple (tuple annotation), or None."""
        result = kernel.trace(target)
        if result.errors:
            raise CompileError(result.errors)
        params = result.kernel.params
        host.check_count(kernel.name, params, arrays)
        buffers = [host.to_buffer(p, a) for p, a in zip(params, arrays)]
        ret = result.kernel.returns
        outputs = execute(result.kernel, buffers)
        values = tuple(host.from_buffer(buf, v.type) for buf, v in zip(outputs, ret.values)) if ret else ()
        if host.returns_tuple(kernel):
            return values
        return values[0] if values else None
