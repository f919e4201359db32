"""`lower(kernel, options)`: a traced kernel to a verified LoweredKernel (docs/reference/diagnostics.md).

Refusals found here ([L] rules, DTYPE-EMU, dtype pairs the target lacks) and internal
compiler errors raise `CompileError` with their diagnostics (errors first, then the
warnings gathered so far); a lowered kernel carries its warnings (W-DTYPE-EMU, and
W-FETCH-1 from the allocated kernel's DM reads).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Union

import attrs

from ir.diagnostic import Diagnostic
from ir.errors import CompileError
from ir.boundary import Traceable
from ir.kernel import Kernel, TraceResult
from ir.machine import checking_against
from tu_ops.lower.banks import bank_run_warnings
from tu_ops.lower.errors import LoweringRefusal
from tu_ops.lower.options import Options
from tu_ops.lower.passes import PassManager, WarningSink, default_passes
from tu_ops.program import LoweredKernel
from tu_ops.target import TargetLike, as_target, for_chips

__all__ = ["Lowered", "lower", "lower_kernel"]


def diagnostic_tuple(items: Iterable[Diagnostic]) -> tuple[Diagnostic, ...]:
    """The warnings as a tuple (any iterable is accepted)."""
    return tuple(items)


@attrs.frozen(kw_only=True)
class Lowered(LoweredKernel):
    """A LoweredKernel with the warnings its lowering emitted and the time its final op
    verification took (neither compared)."""

    warnings: tuple[Diagnostic, ...] = attrs.field(default=(), eq=False, converter=diagnostic_tuple)
    verify_ms: float = attrs.field(default=0.0, eq=False)  # time of the op verification


def lower(kernel: Kernel, options: Options | None = None) -> Lowered:
    """Lower a traced kernel (`TraceResult.kernel`, refusal-free) for `options.target`."""
    options = options if options is not None else Options()
    sink = WarningSink()
    manager = PassManager(default_passes(options, sink), options)
    try:
        with checking_against(options.target.constants):  # a re-checked op reads the target's constants
            out = manager.run(kernel)
    except LoweringRefusal as e:
        errors = tuple(d for d in e.diagnostics if d.severity == "error")
        warnings = tuple(d for d in e.diagnostics if d.severity == "warning") + tuple(sink.warnings)
        raise CompileError(errors + warnings) from e
    fields = {f.name: getattr(out, f.name) for f in attrs.fields(LoweredKernel)}
    warnings = tuple(sink.warnings) + bank_run_warnings(kernel, out, options.target)
    return Lowered(**fields, warnings=warnings, verify_ms=manager.clock.get("verify_ms", 0.0))


Lowerable = Union[Traceable, TraceResult, Kernel]
"""What `lower_kernel` takes: a `@device` kernel, its trace, or the traced IR kernel."""


def lower_kernel(kernel: Lowerable, target: TargetLike = "rngd", options: Options | None = None) -> Lowered:
    """Lower a kernel for `target` and return the verified `Lowered` kernel.

    `kernel` is a `@device` kernel (traced here; trace refusals raise CompileError), a
    `TraceResult`, or a traced `ir.kernel.Kernel`. `options` is an `Options` (built from
    `target` when None). Refusals and ICEs raise CompileError."""
    if options is None:
        options = Options(target=for_chips(as_target(target), getattr(kernel, "chips", 1)))
    if isinstance(kernel, Kernel):
        return lower(kernel, options)
    traced = kernel if isinstance(kernel, TraceResult) else kernel.trace(options.target)
    if traced.errors:
        raise CompileError(traced.errors + traced.warnings)
    return lower(traced.kernel, options)


