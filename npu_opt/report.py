"""`npu_opt.check`: the typecheck backend's entry point and its `Report` (docs/reference/python-api.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ir.diagnostic import Diagnostic
from npu_opt.device import DeviceKernel

if TYPE_CHECKING:
    from tu_ops.target import TargetLike

__all__ = ["Report", "check"]


@attrs.frozen
class Report:
    """Result of `check()`: `ok`, the error diagnostics and the warnings, in report order."""

    kernel: str
    diagnostics: tuple[Diagnostic, ...] = ()
    warnings: tuple[Diagnostic, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.diagnostics

    def render(self) -> str:
        return "\n\n".join(d.render() for d in (*self.diagnostics, *self.warnings))


def check(kernel: DeviceKernel, target: TargetLike = "rngd") -> Report:
    """Trace `kernel` and check every [T] rule; never raises for a refusal."""
    if not isinstance(kernel, DeviceKernel):
        raise TypeError(f"check() takes a @device kernel, not {type(kernel).__name__}")
    result = kernel.trace(target)
    return Report(kernel.name, result.errors, result.warnings)
