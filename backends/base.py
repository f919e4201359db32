"""The one interface every backend implements (docs/testing.md, README.md "Backends").

A backend traces a `@device` kernel (every [T] rule, rule LOWER-1) and then does
its own job: `typecheck` stops after the trace, `cpu` executes the traced IR with the
chip's exact arithmetic, `npu` (later) lowers and emits VISA, `visa` (later) runs that
artifact in the reference interpreter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ir.boundary import Traceable
from ir.diagnostic import Diagnostic
from tu_ops.target import TargetLike

__all__ = ["Backend"]


@runtime_checkable
class Backend(Protocol):
    """A backend behind `npu_opt.run` / `npu-opt --backend NAME`.

    `name` is the `--backend` spelling; `executes` says whether `run` computes numbers.
    `diagnostics` traces the kernel and returns every diagnostic (refusals and warnings,
    in report order) without raising. `run` executes the kernel on host arrays (one per
    parameter, docs/testing.md) and returns its result(s); it raises `CompileError` for a
    refused kernel before touching any data and `NpuOptError` (code `USAGE`) for bad
    arguments."""

    name: str
    executes: bool

    def diagnostics(self, kernel: Traceable, target: TargetLike = "rngd") -> tuple[Diagnostic, ...]:
        ...

    def run(self, kernel: Traceable, arrays: Sequence[Any], target: TargetLike = "rngd") -> Any:
        ...
