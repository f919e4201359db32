"""Tiles at a runtime start (docs/runtime.md#runtime-tile-starts): the `tile` of a view whose
start is a runtime scalar (a launch value or a rolled loop's index), checked while tracing
for every iteration the loop form allows (LOOP-1, LOOP-2, LOOP-7), and the RUNTIME-2
refusals of the readers and writers that take no runtime start.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from ir.diagnostic import Violation
from ir.location import user_location
from ir.loop_affine import UNPROVEN, Affine, range_fault
from ir.rules.runtime_tiles import START_DTYPE, runtime_tile_step
from ir.words import a_an
from npu_opt.runtime_scalars import Refused, refuse_call
from npu_opt.stagebase import Poisoned
from npu_opt.trace import current

__all__ = ["RuntimeStart", "refuse_runtime_read", "runtime_retile"]


_TAKEN = ("a runtime tile start is taken by the `tile` of a view that a Tensor DMA copies from or into, a "
          "redistribution reads or writes, a stream's `begin` reads, or `commit_view` or `memset` writes")


def runtime_retile(view: Any, method: str, level: str, index: Any, length: Any, mapping: Any, start: Any) -> Any:
    """The tile of `view` at the runtime scalar `start`, or a refusal."""
    if level != "element":
        return refuse_call("RUNTIME-2", f"{_TAKEN}; `{method}` (the {level} level) needs a trace-time start", method,
                       help="tile the element level of the view a DMA copies from or into, or guard "
                            "static tiles with `ctx.when(i == k)`")
    if start.dtype.name != START_DTYPE:
        return refuse_call("RUNTIME-9", f"a runtime tile start is a usize, not {a_an(start.dtype)}", method,
                       help="cast it as the reference's `i as usize`: `.tile(..., i.cast(usize))`")
    step = runtime_tile_step(view.type.element, index, length, mapping, view.WRITABLE)
    if isinstance(step, Violation):
        return refuse_call(step.code, step.message, method, help=step.help)
    stride, limit = step
    if start.form is UNPROVEN:
        return refuse_call("LOOP-2", "this tile start is built from a loop index in a way no check covers for "
                       "every iteration (only `+`, `-`, `*` by a constant and casts to usize are)", method,
                       help="write the start as `a * i + b`, or unroll the loop with a Python `for` (docs/loops.md)")
    fault = range_fault(start.form, limit)
    if fault is not None:
        return refuse_call("LOOP-1", f"the tile start {fault}", method, label="out of range for that iteration",
                       help=f"a tile of {length} starts at 0 ..= {limit}: shorten the loop or shift the start")
    bits = view.type.dtype.bits
    if stride * bits % 8:
        return refuse_call("RUNTIME-9", f"one step of the runtime start moves {stride} cells of {view.type.dtype}, "
                                    "not whole bytes", method,
                       help="tile an axis whose step holds whole bytes, or use a trace-time start")
    runtime = RuntimeStart(start, stride, limit)
    if view._runtime is not None:
        runtime = _second_start(view._runtime, runtime, method)
        if isinstance(runtime, Poisoned):
            return runtime
    return view._derive(attrs.evolve(view.type, element=mapping), view._offsets, runtime=runtime)


class RuntimeStart(tuple):
    """A view's runtime start as its `window` records it, `(scalar value, cells per step,
    largest start)`, keeping the `RuntimeScalar` (its loop form) for a second start."""

    scalar: Any

    def __new__(cls, scalar: Any, stride: int, limit: int) -> RuntimeStart:
        self = super().__new__(cls, (scalar.value, stride, limit))
        self.scalar = scalar
        return self


def _proven(start: RuntimeStart) -> bool:
    """Whether the start stays in `0 ..= limit` for every iteration, as the trace proved it
    (an affine form of loop indices with trace-time bounds)."""
    low, high = (start.scalar.form.low(), start.scalar.form.high()) if isinstance(start.scalar.form, Affine) \
        else (None, None)
    return low is not None and high is not None and 0 <= low and high <= start[2]


def _second_start(first: RuntimeStart, second: RuntimeStart, method: str) -> Any:
    """Two runtime starts of one view (a tile of a tile, as nested loops over row and column
    tiles give) as one: the window moves by `a * s1 + b * s2` cells, written as the scalar
    `a/g * s1 + b/g * s2` of `g = gcd(a, b)`-cell steps. The device checks one start against
    one limit, so each must be proven in range while tracing (LOOP-7)."""
    for zero, other in ((first, second), (second, first)):   # a tile as long as its index: start 0
        if zero[2] == 0 and _proven(zero):
            return other
    if not (_proven(first) and _proven(second)):
        return refuse_call("LOOP-7", "a view tiled at two runtime starts needs both proven in range while "
                       "tracing: affine in the indices of loops with a trace-time bound", method,
                       help="copy the first tile out (`.to_dm(ctx.tdma, ...)`) and tile the copy, or "
                            "bound the loop with an int (docs/loops.md#two-runtime-starts)")
    g = math.gcd(first[1], second[1])
    parts = [r.scalar if r[1] == g else r.scalar * (r[1] // g) for r in (first, second)]
    combined = parts[0] + parts[1]
    if isinstance(combined, Refused):
        return Poisoned(method)
    return RuntimeStart(combined, g, first[2] * (first[1] // g) + second[2] * (second[1] // g))


def refuse_runtime_read(what: str) -> None:
    """RUNTIME-2 for a runtime-tiled view read by something other than a Tensor DMA, at the
    user's call being executed (the reader of a view: `begin`, a gather, ...)."""
    current().refuse(Violation("RUNTIME-2", f"{_TAKEN}; {what} needs a trace-time start",
                               help="copy the tile out with `.to_dm(ctx.tdma, ...)` first and use the copy"),
                     user_location(None), "view")
