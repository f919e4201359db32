"""The interpreter's runtime scalars and guards (docs/runtime.md, `tu_ops.runtime`).

A scalar value is a 0-d array of its host dtype, computed with `ir.runtime_types.apply`
(the cpu backend's arithmetic). `Guards` follows the `guard_begin` / `guard_end`
brackets of the body: while a guard is false, a step is skipped, and a skipped write
into a tensor (a record or a program sink with `into`) leaves its value as the tensor it
writes into, as the chip, which never issues the write, leaves it.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.runtime_types import apply
from tu_ops.program import TuProgram

__all__ = ["Guards", "run_runtime"]


def run_runtime(step: Any, env: dict[int, Any]) -> None:
    """Run one scalar record (`scalar_load`, `scalar`) into `env`."""
    if step.MNEMONIC == "scalar_load":
        env[step.result.id] = np.array(env[step.src.id], copy=True)
        return
    rhs = int(env[step.rhs.id]) if step.rhs is not None else step.imm
    dtype = step.output_type.dtype
    env[step.result.id] = np.array(apply(step.op.name, dtype, int(env[step.lhs.id]), rhs), dtype.host_dtype)


@attrs.define
class Guards:
    """The open guards of one run: their depth and the depth of the outermost false one."""

    depth: int = 0
    false_from: int | None = None

    def skips(self, step: Any, env: dict[int, Any]) -> bool:
        """Whether `step` is skipped (its result, if a write into a tensor, set in `env`);
        runs a runtime record itself."""
        mnemonic = getattr(step, "MNEMONIC", None)
        if mnemonic == "guard_begin":
            self.depth += 1
            taken = self.false_from is None and bool(env[step.cond.id])
            if self.false_from is None and not taken:
                self.false_from = self.depth
            env[step.result.id] = np.array(taken)
            return True
        if mnemonic in ("guard_end", "loop_end"):   # a skipped loop's end too
            if self.false_from == self.depth:
                self.false_from = None
            self.depth -= 1
            env[step.result.id] = np.array(self.false_from is None)
            return True
        if self.false_from is not None:
            sink = step.ops[-1] if isinstance(step, TuProgram) else step
            into = getattr(sink, "into", None)
            if into is not None:
                env[sink.result.id] = env[into.id]
            return True
        if mnemonic in ("scalar_load", "scalar"):
            run_runtime(step, env)
            return True
        return False
