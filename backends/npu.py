"""The `npu` backend: trace, then lower to tensor-unit ops and verify them (docs/reference/diagnostics.md).

`diagnostics` reports the trace's refusals when there are any ([T] rules, LOWER-1), else
the lowering's refusals ([L] rules, DTYPE-EMU) or internal compiler error, with every
warning (W-FETCH-1 from the trace, W-DTYPE-EMU from compat mode). The npu backend does
not execute kernels (the `visa` backend runs its artifact).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ir.diagnostic import Diagnostic
from ir.errors import CompileError, NpuOptError

__all__ = ["NpuBackend", "lower_kernel", "declared_axes"]


def declared_axes(kernel: Any) -> tuple[tuple[str, int], ...] | None:
    """The axis declaration order of a `@device` kernel's module (its axes() registry)."""
    from ir.mapping.axes import REGISTRY_NAME

    fn = getattr(kernel, "fn", None)
    reg = getattr(fn, "__globals__", {}).get(REGISTRY_NAME) if fn is not None else None
    return tuple(reg.items()) if isinstance(reg, dict) else None


def _resolve_target(target: Any) -> Any:
    from tu_ops.target import Target, get_target

    return target if isinstance(target, Target) else get_target(target if target is not None else "rngd")


def lower_kernel(kernel: Any, target: Any = "rngd", options: Any = None) -> Any:
    """Lower a kernel for `target` and return the verified `Lowered` kernel.

    `kernel` is a `@device` kernel (traced here; trace refusals raise CompileError), a
    `TraceResult`, or a traced `ir.kernel.Kernel`. `options` is a `tu_ops.lower.Options`
    (built from `target` when None). Refusals and ICEs raise CompileError."""
    import attrs

    from npu_opt.trace import TraceResult
    from tu_ops.lower import Options, lower

    tgt = _resolve_target(target if options is None else options.target)
    if options is None:
        options = Options(target=tgt)
    traced = kernel
    if hasattr(kernel, "trace") and hasattr(kernel, "fn"):
        if options.axes is None:
            options = attrs.evolve(options, axes=declared_axes(kernel))
        traced = kernel.trace(tgt)
    if isinstance(traced, TraceResult):
        if traced.errors:
            raise CompileError(traced.errors + traced.warnings)
        traced = traced.kernel
    return lower(traced, options)


class NpuBackend:
    """Trace, refuse on [T] errors, then lower and verify; never executes (docs/testing.md)."""

    name = "npu"
    executes = False

    def diagnostics(self, kernel: Any, target: Any = "rngd", compat: bool = True) -> tuple[Diagnostic, ...]:
        """Every refusal and warning: the trace's, else the lowering's (never raises)."""
        from tu_ops.lower import Options

        tgt = _resolve_target(target)
        traced = kernel.trace(tgt)
        if traced.errors:
            return traced.diagnostics
        options = Options(target=tgt, compat=compat, axes=declared_axes(kernel))
        try:
            lowered = lower_kernel(traced.kernel, tgt, options)
        except CompileError as e:
            return tuple(d for d in e.diagnostics if d.severity == "error") + traced.warnings + \
                tuple(d for d in e.diagnostics if d.severity == "warning")
        return traced.warnings + tuple(lowered.warnings)

    def run(self, kernel: Any, arrays: Sequence[Any], target: Any = "rngd") -> Any:
        """The npu backend compiles only: a USAGE error pointing at the executing backends."""
        raise NpuOptError("the npu backend lowers kernels but does not execute them; run with "
                          "backend='visa' (the lowered artifact) or backend='cpu'", code="USAGE")
