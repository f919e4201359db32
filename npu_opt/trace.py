"""The tracer: records one IR op per stage call and every refusal as a diagnostic.

A trace never touches data. Refusals do not stop it (docs/machine/index.md): the call's
declared output is still produced, marked poisoned, so later calls on it are not
checked again and independent faults are all reported in one run.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import attrs

from ir.boundary import TargetRef
from ir.diagnostic import Diagnostic, Violation
from ir.errors import NpuOptError
from ir.kernel import TraceResult
from ir.location import Location
from ir.ops import Op, Value
from ir.types import Type

__all__ = ["Tracer", "current", "tracing", "is_tracing", "TraceResult", "stage_log", "note_stage"]


class _Active(threading.local):
    """The tracers being run, innermost last, per thread: kernels traced at the same time
    on several threads (`npu_opt.run` from a thread pool) each see only their own."""

    def __init__(self) -> None:
        self.stack: list[Tracer] = []
        self.stages: dict[int, type] | None = None


_ACTIVE = _Active()


@attrs.define
class TracedStream:
    """One stream started by `begin`: where it began and whether it reached a sink."""

    loc: Location | None
    done: bool = False
    dead: bool = False  # ended by a TYPE-1/TYPE-2 refusal: no TYPE-8 report for it


@attrs.define
class Tracer:
    """Mutable state of one trace: ops, diagnostics, poisoned values, open chains."""

    kernel_name: str
    chips: int
    target: TargetRef = None
    ops: list[Op] = attrs.field(factory=list)
    diagnostics: list[Diagnostic] = attrs.field(factory=list)
    poisoned: set[int] = attrs.field(factory=set)
    chains: list[TracedStream] = attrs.field(factory=list)
    _next_id: int = 0
    _reported: set[tuple] = attrs.field(factory=set)

    def value(self, t: Type) -> Value:
        """A fresh SSA value of type `t`."""
        v = Value(self._next_id, t)
        self._next_id += 1
        return v

    def refuse(self, violation: Violation, loc: Location | None, stage: str | None = None,
               op: Op | None = None) -> None:
        """Record a refusal (or a warning) at the user's location, once: a Python loop traces
        its body once per iteration, and the same code and message at the same place again
        (another iteration, another call of one helper) adds nothing for the user."""
        text = op.text() if op is not None else None
        diagnostic = Diagnostic.from_violation(violation, loc, stage, text)
        key = (diagnostic.code, diagnostic.message, diagnostic.file, diagnostic.line, diagnostic.col)
        if key not in self._reported:
            self._reported.add(key)
            self.diagnostics.append(diagnostic)

    def emit(self, op: Op, *, refused: Violation | None = None, stage: str | None = None) -> bool:
        """Record `op`; run its rules unless an input was already refused or the caller refuses
        the op itself (`refused`, reported at the op as a call of `stage`).

        Returns True when the op is sound (its result may be checked further)."""
        if refused is not None:
            self.refuse(refused, op.loc, stage, op)
        self.ops.append(op)
        if refused is not None or any(v.id in self.poisoned for v in op.operands()):
            self._poison(op)
            return False
        violation = op.check()
        if violation is None:
            return True
        self.refuse(violation, op.loc, op.STAGE, op)
        self._poison(op)
        return False

    def _poison(self, op: Op) -> None:
        if op.result is not None:
            self.poisoned.add(op.result.id)

    def is_poisoned(self, value: Value) -> bool:
        return value.id in self.poisoned


def current() -> Tracer:
    """The active tracer; stage objects exist only inside a trace."""
    stack = _ACTIVE.stack
    if not stack:
        raise NpuOptError("stages can only be called while a @device kernel is traced "
                          "(use npu_opt.check / compile / run)", code="USAGE")
    return stack[-1]


def is_tracing() -> bool:
    """Whether a kernel is being traced on this thread."""
    return bool(_ACTIVE.stack)


@contextlib.contextmanager
def tracing(tracer: Tracer) -> Iterator[Tracer]:
    """Make `tracer` the active one for the duration of a kernel call."""
    stack = _ACTIVE.stack
    stack.append(tracer)
    try:
        yield tracer
    finally:
        stack.pop()


@contextlib.contextmanager
def stage_log() -> Iterator[dict[int, type]]:
    """Record, while a kernel is traced in this block, which stage class holds each traced
    value (value id -> class): the methods a stream offers after each call, for the
    language server's completion (driver/lsp). Off unless asked for."""
    saved, _ACTIVE.stages = _ACTIVE.stages, {}
    try:
        yield _ACTIVE.stages
    finally:
        _ACTIVE.stages = saved


def note_stage(value: Value, stage: object) -> None:
    """A stage object now holds `value` (recorded only inside `stage_log`)."""
    log = _ACTIVE.stages
    if log is not None:
        log[value.id] = type(stage)
