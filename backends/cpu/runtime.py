"""The cpu backend's runtime scalars and guards (docs/runtime.md).

A scalar value is a 0-d array of its host dtype; `scalar` ops evaluate with
`ir.runtime_types.apply`, the interpreter's arithmetic too. `Guards` is the executor's
state of the open `when` blocks: while one of them is false, an op is skipped; a skipped
write into a tensor (an op with an `into` operand) leaves that tensor as it was, so its
result is the `into` buffer (the trace refuses any other value used after the block,
RUNTIME-6).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ir.runtime_ops import GuardBegin, GuardEnd, LoopBegin, LoopEnd, ScalarOp, ScalarLoad
from ir.regions import INDEX_DTYPE, closes_region
from ir.runtime_types import apply

from backends.cpu.handlers import handles

__all__ = ["Guards"]


@handles(ScalarLoad)
def _to_spm(op: ScalarLoad, src: np.ndarray) -> np.ndarray:
    return np.array(src, copy=True)


@handles(ScalarOp)
def _scalar(op: ScalarOp, lhs: np.ndarray, rhs: np.ndarray | None = None) -> np.ndarray:
    right = int(rhs) if rhs is not None else op.imm
    return np.array(apply(op.op, op.dtype, int(lhs), right), op.dtype.host_dtype)


@handles(LoopBegin, LoopEnd)
def _loop(op: LoopBegin | LoopEnd, *operands: np.ndarray) -> np.ndarray:
    """A rolled loop's opener or end outside a walk that steers it (`Guards.steer` does): its start."""
    return np.array(op.start if isinstance(op, LoopBegin) else 0, INDEX_DTYPE)


@handles(GuardBegin, GuardEnd)
def _guard(op: GuardBegin | GuardEnd, flag: np.ndarray) -> np.ndarray:
    """`when` (its operand the condition) and its end (its operand the begin's flag): that flag."""
    return np.array(bool(flag))


@attrs.define
class Guards:
    """The open guards of one run: how many, and how many of them are false."""

    depth: int = 0
    false_from: int | None = None   # the depth of the outermost false guard

    def live(self) -> bool:
        """Whether the ops here are done (no open guard is false)."""
        return self.false_from is None

    def skips(self, op: Any, env: dict[int, Any]) -> bool:
        """Whether `op` is skipped; a skipped op's result (if any) is set in `env`."""
        if isinstance(op, GuardBegin):
            self.depth += 1
            if self.false_from is None and not bool(env[op.cond.id]):
                self.false_from = self.depth
                env[op.result.id] = np.array(False)
                return True
            return self.false_from is not None and self._skip(op, env)
        if isinstance(op, GuardEnd) or closes_region(op):   # a skipped loop's end too
            skipped = self.false_from is not None
            if self.false_from == self.depth:
                self.false_from = None
            self.depth -= 1
            if skipped:
                env[op.result.id] = np.array(False)
            return skipped
        return self.false_from is not None and self._skip(op, env)

    @staticmethod
    def _skip(op: Any, env: dict[int, Any]) -> bool:
        into = getattr(op, "into", None)
        if op.result is not None:
            env[op.result.id] = env[into.id] if into is not None else np.array(False)
        return True
