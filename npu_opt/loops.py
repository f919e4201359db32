"""Rolled loops: `for i in ctx.loop(n)` (docs/loops.md).

A Python `for` runs while the kernel is traced, so each of its iterations is traced and
compiled on its own (furiosa-opt's `#[unroll] for`). `ctx.loop` is the reference's plain
`for` of a device function: its body is traced once, into a `loop` ... `end_loop` region
(`ir.regions`), and the device runs it once per index. The index is a `usize` runtime
scalar whose range is known while tracing (`ir.loop_affine`), usable wherever a runtime
scalar is: tile starts of Tensor DMAs and `begin`s, `ctx.when` conditions, scalar
arithmetic (`2 * i + 1`). The bound is an int or a runtime unsigned scalar (an
`HbmScalar`, read here, or a `RuntimeScalar`): a runtime-bounded loop.

LOOP-1: a tile start out of range for some iteration; LOOP-2: a tile start no check covers
for every iteration; LOOP-3: a value made in the body used after the loop, or a stream
crossing its edge (`ir.runtime_scope`); LOOP-4: a bound that is not a count.
"""

from __future__ import annotations

import sys
from typing import Any

from ir.diagnostic import Violation
from ir.location import instructions_after
from ir.loop_affine import Index, index_form
from ir.runtime_ops import LoopBegin, LoopEnd
from ir.words import a_an
from npu_opt.runtime_scalars import REFUSED, Refused, RuntimeScalar, ScalarParam, usize
from npu_opt.scalars import plain_number
from npu_opt.stagebase import Poisoned, location_of
from npu_opt.trace import current

__all__ = ["loop"]

_UNSIGNED = ("u32", "u64", "usize")


def loop(ctx: Any, first: Any, second: Any = None) -> Any:
    """`ctx.loop(stop)` or `ctx.loop(start, stop)`: the body traced once as a rolled loop
    over `start <= i < stop`; yields the index `i` (a `usize` runtime scalar) once."""
    start, stop = (0, first) if second is None else (first, second)
    loc = location_of("loop")
    tracer = current()
    name = _target_name(sys._getframe(2))  # the kernel's frame (through `Context.loop`)
    begin_start = plain_number(start)
    if not isinstance(begin_start, int) or isinstance(begin_start, bool) or begin_start < 0:
        return _refused(tracer, loc, f"the start of `ctx.loop` is {start!r}, not an int >= 0 known while tracing")
    bound = None
    static = plain_number(stop)
    if isinstance(stop, ScalarParam):
        stop = stop.to_spm(ctx.tdma)
    if isinstance(stop, (Poisoned, Refused)):
        return _refused(tracer, loc, None)
    if isinstance(stop, RuntimeScalar):
        if stop.dtype.name not in _UNSIGNED:
            return _refused(tracer, loc, f"a runtime loop bound is an unsigned count (u32, u64, usize), "
                                         f"not {a_an(str(stop.dtype))}", help="cast it: `n.cast(usize)`, after checking "
                                         "it is not negative")
        bound = stop if stop.dtype.name == "usize" else stop.cast(usize)
        if isinstance(bound, Refused):
            return _refused(tracer, loc, None)
        static = None
    elif not isinstance(static, int) or isinstance(static, bool):
        return _refused(tracer, loc, f"the bound of `ctx.loop` is {stop!r}, not an int or a runtime unsigned scalar")
    return _body(tracer, loc, name, begin_start, static, bound)


class _Rolled:
    """The iterator `ctx.loop` gives: the first step opens the loop and gives the index, the
    second closes it. A body left by `break` or `return` never closes it: the trace's
    scope rules refuse that (LOOP-4, `ir.runtime_scope`)."""

    def __init__(self, tracer: Any, opener: Any, index: Any) -> None:
        self.tracer, self.opener, self.index = tracer, opener, index
        self.steps = 0

    def __iter__(self) -> _Rolled:
        return self

    def __next__(self) -> Any:
        self.steps += 1
        if self.steps == 1:
            if self.opener is not None:
                self.tracer.emit(self.opener)
            return self.index
        if self.steps == 2 and self.opener is not None:
            self.tracer.emit(LoopEnd.build(self.tracer.value, begin=self.opener.result, loc=self.opener.loc))
        raise StopIteration


def _body(tracer: Any, loc: Any, name: str, start: int, stop: int | None, bound: Any) -> Any:
    if stop is not None and stop <= start:
        return iter(())   # no iteration: the body is not traced, as a Python `for` over an empty range
    op = LoopBegin.build(tracer.value, bound=None if bound is None else bound.value, start=start, stop=stop, loc=loc)
    index = Index(op.result.id, start, None if stop is None else stop - 1, name)
    return _Rolled(tracer, op, RuntimeScalar(op.result, index_form(index)))


def _refused(tracer: Any, loc: Any, message: str | None, help: str | None = None) -> Any:
    """No loop: LOOP-4 (unless the bound's fault is already reported); the body is traced
    once with a refused index, so its own faults are still reported."""
    if message is not None:
        tracer.refuse(Violation("LOOP-4", message, help=help or "write `ctx.loop(n)` or `ctx.loop(start, stop)` "
                                "with ints, or a runtime u32/u64/usize bound"), loc, "loop")
    return _Rolled(tracer, None, REFUSED)


def _target_name(frame: Any) -> str:
    """The name the caller's `for` binds the index to (for messages), else `i`."""
    after = instructions_after(frame.f_code, frame.f_lasti, 8)
    for ins in after:   # the call, GET_ITER, FOR_ITER, then the store of the index
        if ins.opname.startswith("STORE_"):
            return str(ins.argval)
    return "i"
