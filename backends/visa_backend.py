"""The `visa` backend: compile with the npu pipeline, then run the VISA artifact (docs/testing.md).

`run` compiles the kernel (`backends.npu.compile_kernel`: trace, lower, verify,
emit), parses the emitted text back (`visa.parse_visa`) and executes that parsed artifact
in the VISA interpreter (`visa.interp.execute`), so what runs is exactly what a `.visa`
file says, not the traced IR. A refused kernel (any [T] or [L] rule) or an internal
compiler error raises `CompileError` before any data is read; an emitted artifact the
interpreter cannot execute is an internal compiler error too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backends import inout
from backends.cpu.host import returns_tuple
from backends.npu import NpuBackend, compile_kernel
from ir.boundary import Traceable
from ir.diagnostic import Diagnostic
from ir.errors import CompileError
from ir.outcome import ice_diagnostic
from tu_ops.target import Target, TargetLike, as_target, for_chips
from visa import parse_visa
from visa.artifact import VisaArtifact
from visa.interp import InterpError, execute_inout

__all__ = ["VisaBackend"]


class VisaBackend:
    """npu lowering + the VISA reference interpreter; agrees with `cpu` bit for bit."""

    name = "visa"
    executes = True

    def diagnostics(self, kernel: Traceable, target: TargetLike = "rngd") -> tuple[Diagnostic, ...]:
        """Every refusal and warning of the trace and the lowering (as the npu backend)."""
        return NpuBackend().diagnostics(kernel, target)

    def compile(self, kernel: Traceable, target: TargetLike = "rngd") -> VisaArtifact:
        """The parsed `VisaArtifact` of `kernel`; CompileError for a refusal or an ICE."""
        outcome = compile_kernel(kernel, target)
        if outcome.status != "ok" or outcome.text is None:
            raise CompileError(outcome.diagnostics)
        return parse_visa(outcome.text)

    def run(self, kernel: Traceable, arrays: Sequence[Any], target: TargetLike = "rngd") -> Any:
        """Results as host arrays, then the in-out arrays written in place (`backends.inout`)."""
        artifact = self.compile(kernel, target)
        params = artifact.kernel.params
        call = inout.prepare(kernel, [(p.name, p.type, p.inout) for p in params], arrays,
                            inout.target_name(target), inout.target_name)
        try:
            results, finals = execute_inout(artifact, call.flat, _kernel_target(target, kernel))
            return inout.finish(call, results, finals, returns_tuple(kernel))
        except InterpError as e:  # the compiler emitted an artifact that does not execute: a bug of ours
            raise CompileError((ice_diagnostic(kernel.name, e),)) from e


def _kernel_target(target: TargetLike, kernel: Traceable) -> Target:
    """The target the kernel was compiled for (`tu_ops.target.for_chips`)."""
    return for_chips(as_target(target), kernel.chips)
