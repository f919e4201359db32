"""`lower(kernel, options)`: a traced kernel to a verified LoweredKernel (docs/reference/diagnostics.md).

Refusals found here ([L] rules, DTYPE-EMU, dtype pairs the target lacks) and internal
compiler errors raise `CompileError` with their diagnostics (errors first, then the
warnings gathered so far); a lowered kernel carries its warnings (W-DTYPE-EMU, and
W-FETCH-1 from the allocated kernel's DM reads).
"""

from __future__ import annotations

from typing import Any

import attrs

from ir.diagnostic import Diagnostic
from ir.errors import CompileError
from tu_ops.lower.banks import bank_run_warnings
from tu_ops.lower.errors import LoweringRefusal
from tu_ops.lower.options import Options
from tu_ops.lower.passes import PassManager, Sink, default_passes
from tu_ops.program import LoweredKernel

__all__ = ["Lowered", "lower"]


@attrs.frozen(kw_only=True)
class Lowered(LoweredKernel):
    """A LoweredKernel with the warnings its lowering emitted (`warnings`, not compared)."""

    warnings: tuple[Diagnostic, ...] = attrs.field(default=(), eq=False, converter=tuple)

    def base(self) -> LoweredKernel:
        """The same kernel as a plain LoweredKernel (for comparing with hand-built ones)."""
        fields = {f.name: getattr(self, f.name) for f in attrs.fields(LoweredKernel)}
        return LoweredKernel(**fields)


def lower(kernel: Any, options: Options | None = None) -> Lowered:
    """Lower a traced kernel (`TraceResult.kernel`, refusal-free) for `options.target`."""
    options = options if options is not None else Options()
    sink = Sink()
    try:
        out = PassManager(default_passes(options, sink), options).run(kernel)
    except LoweringRefusal as e:
        errors = tuple(d for d in e.diagnostics if d.severity == "error")
        warnings = tuple(d for d in e.diagnostics if d.severity == "warning") + tuple(sink.warnings)
        raise CompileError(errors + warnings) from e
    fields = {f.name: getattr(out, f.name) for f in attrs.fields(LoweredKernel)}
    warnings = tuple(sink.warnings) + bank_run_warnings(kernel, out, options.target)
    return Lowered(**fields, warnings=warnings)
