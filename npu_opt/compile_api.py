"""`npu_opt.compile`: trace, lower, verify and emit one kernel's VISA artifact (docs/getting-started.md).

`compile_kernel` is the shared pipeline behind `npu_opt.compile` and `npu-opt compile`:
it never raises for a user refusal or an internal error, it returns an `Outcome` whose
status is `ok`, `refused` or `ice` with the diagnostics and per-stage timings.
"""

from __future__ import annotations

from hashlib import sha256
from typing import TYPE_CHECKING, Any

import attrs

from ir.diagnostic import Diagnostic
from ir.errors import CompileError
from ir.outcome import Outcome, ice_diagnostic
from ir.version import VERSION
from npu_opt.device import DeviceKernel

if TYPE_CHECKING:  # `from npu_opt import *` loads this module: `npu-opt check` never loads tu_ops
    from tu_ops.target import TargetLike

__all__ = ["Artifact", "Outcome", "compile", "compile_kernel", "ice_diagnostic", "npu_opt_version"]


def npu_opt_version() -> str:
    """The installed compiler version (named in ICE reports and the manifest)."""
    return VERSION


@attrs.frozen
class Artifact:
    """A compiled kernel (docs/reference/python-api.md): canonical VISA text and its parsed records."""

    text: str
    kernel: str
    target: str
    manifest_entry: dict[str, Any]
    records: tuple[Any, ...]
    warnings: tuple[Diagnostic, ...] = ()


def compile_kernel(kernel: DeviceKernel, target: TargetLike = "rngd", compat: bool = True,
                   dump_ir: str | None = None) -> Outcome:
    """Run the npu pipeline on one kernel (`backends.npu.compile_kernel`); never raises for
    refusals or ICEs."""
    from backends.npu import compile_kernel as run_pipeline

    return run_pipeline(kernel, target, compat, dump_ir)


def compile(kernel: DeviceKernel, target: TargetLike = "rngd", compat: bool = True) -> Artifact:  # noqa: A001
    """Compile a `@device` kernel to its VISA artifact; raises `CompileError` on refusal/ICE."""
    if not isinstance(kernel, DeviceKernel):
        raise TypeError(f"compile() takes a @device kernel, not {type(kernel).__name__}")
    outcome = compile_kernel(kernel, target, compat)
    text = outcome.text
    if outcome.status != "ok" or text is None:
        raise CompileError(outcome.diagnostics + outcome.warnings)
    from visa.schedule import schedule_artifact

    artifact = outcome.artifact
    entry = {"name": kernel.name, "qualname": f"{kernel.__module__}.{kernel.__qualname__}",
             "file": kernel.file_display, "status": "ok", "code": None,
             "artifact": f"{kernel.name}.visa",
             "sha256": sha256(text.encode()).hexdigest(),
             "timings_ms": outcome.timings_ms, "makespan": schedule_artifact(artifact).makespan}
    records = tuple(artifact.kernel.ops())
    name = target if isinstance(target, str) else "rngd" if target is None else target.name
    return Artifact(text, kernel.name, name, entry, records, outcome.warnings)
