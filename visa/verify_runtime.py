"""The verifier's checks of runtime guards (docs/runtime.md): `guard_begin` / `guard_end`
records nest like brackets in body order, each `guard_end` closing the innermost open
guard, and every guard is closed before `return` (rule RUNTIME-8)."""

from __future__ import annotations

from typing import Any

from tu_ops.program import TuProgram

__all__ = ["guard_problem", "is_runtime"]


def is_runtime(step: Any) -> bool:
    """Whether a body step is a runtime scalar or guard record (`tu_ops.runtime`)."""
    return not isinstance(step, TuProgram) and getattr(step, "RUNTIME", False)


def guard_problem(kernel: Any) -> tuple[Any, str] | None:
    """(record, problem) of the first guard record out of its bracket order, or None."""
    open_guards: list[Any] = []
    for step in kernel.steps:
        mnemonic = getattr(step, "MNEMONIC", None)
        if mnemonic == "guard_begin":
            open_guards.append(step)
        elif mnemonic == "guard_end":
            if not open_guards or open_guards[-1].result != step.begin:
                inner = open_guards[-1].result if open_guards else None
                return step, (f"guard_end closes {step.begin}, but the innermost open guard is {inner}"
                              if inner is not None else f"guard_end closes {step.begin}, but no guard is open")
            open_guards.pop()
    if open_guards:
        return open_guards[-1], "this guard is never closed by a guard_end"
    return None
