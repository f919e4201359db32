"""The `typecheck` backend: trace with phantom tensors, check every [T] rule, never execute."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ir.boundary import Traceable
from ir.diagnostic import Diagnostic
from tu_ops.target import TargetLike
from ir.errors import NpuOptError

__all__ = ["TypecheckBackend"]


class TypecheckBackend:
    """Traces the kernel and returns its diagnostics; nothing on disk, no data (docs/testing.md)."""

    name = "typecheck"
    executes = False

    def diagnostics(self, kernel: Traceable, target: TargetLike = "rngd") -> tuple[Diagnostic, ...]:
        """Every refusal and warning of the trace, in report order."""
        return kernel.trace(target).diagnostics

    def run(self, kernel: Traceable, arrays: Sequence[Any], target: TargetLike = "rngd") -> Any:
        """The typecheck backend computes nothing: a USAGE error pointing at the others."""
        raise NpuOptError("the typecheck backend does not execute kernels; use "
                          "npu_opt.check(kernel) for its diagnostics or backend='cpu' to run it",
                          code="USAGE")
