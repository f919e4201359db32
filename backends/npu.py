"""The `npu` backend: trace, then lower to tensor-unit ops and verify them (docs/reference/diagnostics.md).

`compile_kernel` is the whole compile of one kernel (trace, `tu_ops.lower.lower_kernel`,
emit), shared by `npu_opt.compile`, `npu-opt compile` and the `visa` backend.

`diagnostics` reports the trace's refusals when there are any ([T] rules, LOWER-1), else
the lowering's refusals ([L] rules, DTYPE-EMU) or internal compiler error, with every
warning (W-FETCH-1 from the trace, W-DTYPE-EMU from compat mode). The npu backend does
not execute kernels (the `visa` backend runs its artifact).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from ir.boundary import Traceable
from ir.diagnostic import Diagnostic
from ir.errors import CompileError, NpuOptError
from ir.kernel import Kernel
from ir.outcome import Outcome, ice_diagnostic
from tu_ops.lower.api import lower_kernel  # re-exported: `tu_ops.lower.lower_kernel`
from tu_ops.lower.options import Options
from tu_ops.target import Target, TargetLike, as_target, for_chips
from visa.facts import with_facts
from visa.printer import artifact_of, print_artifact

__all__ = ["NpuBackend", "emit_lowered", "lower_kernel", "compile_kernel", "lowering_key"]


def compile_kernel(kernel: Traceable, target: TargetLike = "rngd", compat: bool = True,
                   dump_ir: str | None = None, gate: Any = None, traced: Any = None) -> Outcome:
    """Trace, lower, verify and emit one kernel's VISA text; never raises for refusals or ICEs
    (the returned `Outcome` says `ok`, `refused` or `ice`, with per-stage timings).
    `gate(lowered, target)`, when given, runs on the verified lowering before emission: a
    value other than None stops there and is returned instead (`driver.tune` prunes so).
    `traced`, when given, is the kernel's `TraceResult` on this target, traced already."""
    timings: dict[str, float] = {}
    tgt = for_chips(as_target(target), kernel.chips)
    start = time.perf_counter()
    try:
        traced = kernel.trace(tgt) if traced is None else traced
    except Exception as e:  # noqa: BLE001 - a crash while tracing is a bug of ours
        return Outcome(kernel.name, "ice", None, (ice_diagnostic(kernel.name, e),), (), timings)
    timings["trace"] = _ms(start)
    if traced.errors:
        return Outcome(kernel.name, "refused", None, traced.errors, traced.warnings, timings)
    start = time.perf_counter()
    try:
        lowered = lower_kernel(traced.kernel, tgt, Options(target=tgt, compat=compat, dump_ir=dump_ir))
    except CompileError as e:
        errors = tuple(d for d in e.diagnostics if d.severity == "error")
        status = "ice" if any(d.code == "ICE" for d in errors) else "refused"
        return Outcome(kernel.name, status, None, errors, traced.warnings, timings)
    except Exception as e:  # noqa: BLE001 - LOWER-3: any exception inside lowering is an ICE
        return Outcome(kernel.name, "ice", None, (ice_diagnostic(kernel.name, e),), traced.warnings, timings)
    total = _ms(start)
    timings["lower"] = round(total - lowered.verify_ms, 3)
    timings["verify"] = round(lowered.verify_ms, 3)  # done by the pass manager, once
    warnings = traced.warnings + tuple(lowered.warnings)
    stop = gate(lowered, tgt) if gate is not None else None
    if stop is not None:
        return stop
    try:
        start = time.perf_counter()
        text, artifact = emit_lowered(lowered, tgt)
        timings["emit"] = _ms(start)
    except Exception as e:  # noqa: BLE001 - a failure to emit a verified kernel is an ICE
        return Outcome(kernel.name, "ice", None, (ice_diagnostic(kernel.name, e),), warnings, timings)
    return Outcome(kernel.name, "ok", text, (), warnings, timings, artifact)


def lowering_key(kernel: Kernel, target: Target, compat: bool = True) -> tuple[Any, ...]:
    """What a traced kernel's lowering depends on, as a dict key: the target, the mode, the
    `ir.Kernel` (its ops compare by value) and what its ops' equality leaves out, their facts
    and source locations. Two traces with equal keys lower and emit alike."""
    return (target, compat, kernel, tuple((op.loc, tuple(op.role_fields("fact"))) for op in kernel.ops))


def emit_lowered(lowered: Any, tgt: Any) -> tuple[str, Any]:
    """The canonical text and the artifact `visa.parse_visa` reads back from it (the same
    records, cost and derived allocation facts), made without parsing the text, of a
    verified lowering (`compile_kernel`'s last step; driver/tune_eval.py emits from its gate)."""
    artifact = artifact_of(lowered, tgt)
    return print_artifact(artifact), attrs.evolve(artifact, kernel=with_facts(artifact.kernel, tgt))


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1e3, 3)


class NpuBackend:
    """Trace, refuse on [T] errors, then lower and verify; never executes (docs/testing.md)."""

    name = "npu"
    executes = False

    def diagnostics(self, kernel: Traceable, target: TargetLike = "rngd", compat: bool = True) -> tuple[Diagnostic, ...]:
        """Every refusal and warning: the trace's, else the lowering's (never raises)."""
        tgt = for_chips(as_target(target), kernel.chips)
        traced = kernel.trace(tgt)
        if traced.errors:
            return traced.diagnostics
        options = Options(target=tgt, compat=compat)
        try:
            lowered = lower_kernel(traced.kernel, tgt, options)
        except CompileError as e:
            return tuple(d for d in e.diagnostics if d.severity == "error") + traced.warnings + \
                tuple(d for d in e.diagnostics if d.severity == "warning")
        return traced.warnings + tuple(lowered.warnings)

    def run(self, kernel: Traceable, arrays: Sequence[Any], target: TargetLike = "rngd") -> Any:
        """The npu backend compiles only: a USAGE error pointing at the executing backends."""
        raise NpuOptError("the npu backend lowers kernels but does not execute them; run with "
                          "backend='visa' (the lowered artifact) or backend='cpu'", code="USAGE")
