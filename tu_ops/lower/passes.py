"""The lowering passes and the pass manager (README.md "Passes").

A pass is a frozen attrs object with a kebab-case `name` and `run(kernel) -> kernel`:
valid IR in, valid IR out. `PassManager` runs them in order, verifies after every pass
(the traced IR's structural verifier, or every op verifier plus MEM-3/MEM-4 once the
kernel is lowered) and, with `dump_ir`, writes each pass's output as
`<kernel>.<nn>-<pass>.txt` (`00-trace` is the input).

Verifier failures are classified here (rule LOWER-2, LOWER-3): an [L] rule is a
user refusal at the op's location; any other rule is an internal compiler error.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

import attrs

from ir.diagnostic import Diagnostic
from ir.errors import InternalError
from ir.kernel import Kernel, verify_kernel
from tu_ops.base import OpVerifyError
from tu_ops.lower.alloc import allocate, check_capacity
from tu_ops.lower.build import build_lowered
from tu_ops.lower.emulation import emulate_dtypes
from tu_ops.lower.errors import L_CODES, LoweringRefusal, ice, ice_from_exception, refusal, stage_of
from tu_ops.lower.options import Options
from tu_ops.program import LoweredKernel

__all__ = ["EmulateDtypes", "LowerOps", "AllocateMemory", "PassManager", "default_passes", "kernel_text",
           "WarningSink"]


@attrs.frozen
class WarningSink:
    """Where passes put their warnings (the pass objects stay frozen)."""

    warnings: list[Diagnostic] = attrs.field(factory=list)


@attrs.frozen
class EmulateDtypes:
    """Check dtype pairs against the target; insert compat lookups (W-DTYPE-EMU) or refuse
    (DTYPE-EMU). Traced IR in, traced IR out."""

    name: ClassVar[str] = "emulate-dtypes"
    options: Options
    sink: WarningSink

    def run(self, kernel: Kernel) -> Kernel:
        out, warnings = emulate_dtypes(kernel, self.options.target, self.options.compat)
        self.sink.warnings.extend(warnings)
        return out


@attrs.frozen
class LowerOps:
    """Lower every traced stage to its tu op, placed and numbered (docs/reference/diagnostics.md)."""

    name: ClassVar[str] = "lower-ops"
    options: Options

    def run(self, kernel: Kernel) -> LoweredKernel:
        out = build_lowered(kernel, self.options.target, self.options.axes)
        check_capacity(out, self.options.target)
        return out


@attrs.frozen
class AllocateMemory:
    """Liveness, DM addresses and TRF rows; MEM-3 / MEM-4 refusals (visa/visa.lark)."""

    name: ClassVar[str] = "allocate-memory"
    options: Options

    def run(self, kernel: LoweredKernel) -> LoweredKernel:
        return allocate(kernel, self.options.target)


def default_passes(options: Options, sink: WarningSink) -> tuple[Any, ...]:
    """The pipeline, in order."""
    return (EmulateDtypes(options, sink), LowerOps(options), AllocateMemory(options))


def kernel_text(kernel: Any) -> str:
    """The dump text of a traced or lowered kernel."""
    if isinstance(kernel, LoweredKernel):
        head = f"lowered @{kernel.name}(chip={kernel.chip}) axes {kernel.axes}"
        allocs = [f"; dm {a.tensor} [{a.base}, {a.base + a.size}) steps {a.first_step}..{a.last_step}"
                  for a in kernel.dm_allocations]
        allocs += [f"; trf {a.tensor} lanes {a.lanes} rows [{a.base_row}, {a.base_row + a.rows}) "
                   f"steps {a.first_step}..{a.last_step}" for a in kernel.trf_allocations]
        params = [p.text() for p in kernel.params]
        return "\n".join([head, *params, kernel.body_text(locs=True), *allocs]) + "\n"
    return kernel.text()


@attrs.frozen
class PassManager:
    """Run passes in order, verify after each, dump text when asked."""

    passes: tuple[Any, ...]
    options: Options
    clock: dict[str, float] = attrs.field(factory=dict)  # "verify_ms": the last op verification
    def run(self, kernel: Kernel) -> Any:
        self._dump(kernel, 0, "trace")
        self._verify(kernel, "trace")
        for n, p in enumerate(self.passes, start=1):
            try:
                kernel = p.run(kernel)
            except LoweringRefusal:
                raise
            except Exception as e:  # noqa: BLE001 - LOWER-3: an exception inside lowering is an ICE
                raise LoweringRefusal([ice_from_exception(e, p.name, _first_loc(kernel))]) from e
            self._dump(kernel, n, p.name)
            self._verify(kernel, p.name)
        return kernel

    def _dump(self, kernel: Any, n: int, name: str) -> None:
        directory = self.options.dump_ir
        if directory is None:
            return
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / f"{kernel.name}.{n:02d}-{name}.txt").write_text(kernel_text(kernel), encoding="utf-8")

    def _verify(self, kernel: Any, where: str) -> None:
        if not isinstance(kernel, LoweredKernel):
            try:
                verify_kernel(kernel)
            except InternalError as e:
                raise LoweringRefusal([ice(None, f"the IR verifier failed after `{where}`: {e}")]) from e
            return
        start = time.perf_counter()
        try:
            kernel.verify(self.options.target)
        except OpVerifyError as e:
            raise LoweringRefusal([verifier_diagnostic(e, where)]) from e
        self.clock["verify_ms"] = (time.perf_counter() - start) * 1e3


def verifier_diagnostic(e: OpVerifyError, where: str) -> Diagnostic:
    """An op verifier failure: a user refusal for an [L] rule, else an ICE naming the rule."""
    op = e.op
    text = op.text() if op is not None and hasattr(op, "text") else None
    loc = e.loc if e.loc is not None else getattr(op, "loc", None)
    if e.code in L_CODES:
        return refusal(e.code, str(e), loc, stage=stage_of(op), op=text, notes=e.notes)
    return ice(e.code, f"op verifier {e.code} refused a lowered op after `{where}`: {e}", loc,
               stage=stage_of(op), op=text, notes=e.notes)


def _first_loc(kernel: Any) -> Any:
    ops = kernel.ops if isinstance(kernel, Kernel) else list(kernel.ops())
    return next((op.loc for op in ops if getattr(op, "loc", None) is not None), None)
