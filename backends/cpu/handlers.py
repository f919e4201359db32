"""The cpu handler of each traced op class, filled by declaration.

A module of `backends.cpu` declares `@handles(ir.SomeOp)` on a function `(op, *operand
buffers) -> result buffer`; `options=True` when it also takes the `CpuOptions` (keyword
`options`), which choose how it computes, never what; `lazy=True` (or a predicate of the op)
when it also takes a move not copied yet (`backends.cpu.lazy_rows.LazyRows`) as an operand:
every other handler gets its operands copied out; `donate=i` when it may write operand i
in place, told so by the keyword `owned` (backends/cpu/executor.py says when); `compact=True`
when it takes a value holding its live rows only (`backends.cpu.compact.Compact`);
`makes_compact=True` when it may also make one of a full buffer, told so by the keyword
`compact`. The package (backends/cpu/__init__.py) imports every module that declares one,
so a new engine adds its handler in its own module and one import there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ir.declare import Table
from ir.stage_spec import STAGES

from backends.cpu import layout

__all__ = ["HANDLERS", "handles", "takes_compact", "takes_lazy", "takes_options"]


def _stage_handler(op_cls: Any) -> tuple[Callable[..., Any], dict[str, Any]] | None:
    """A declared stage's handler (ir.stage_spec): its `run` on each row of the stream buffer."""
    spec = STAGES.get(op_cls)
    if spec is None:
        return None

    def handler(op: Any, buf: Any) -> Any:
        t = op.input.type
        out = spec.run(op, buf.reshape(-1, t.time.size, t.packet.size))
        return out.reshape(layout.shape_of(op.result.type))

    return handler, {}


# filled by the modules backends/cpu/__init__.py imports
HANDLERS = Table("cpu handler", package="backends.cpu", derive=_stage_handler)


def handles(*op_classes: type, options: bool = False,
            lazy: bool | Callable[[Any], bool] = False,
            donate: int | None = None, compact: bool = False,
            makes_compact: bool = False, faults: bool = False,
            gathers: bool = False, memo: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn` as the cpu handler of `op_classes`; `faults`: it may raise an error its
    operands' values decide (then no in-out array is written in place: backends/cpu/executor.py);
    `gathers`: it takes lazy operands but gathers new rows from them, passing no form on
    (what its consumers read does not decide what its operands are made as: `compact.read_full`);
    `memo`: it keeps and reads results in the run's memo (backends/cpu/run_memo.py), which the
    executor drops once no later step of the run has such a handler."""
    return HANDLERS.declare(*op_classes, options=options, lazy=lazy, donate=donate, compact=compact,
                            makes_compact=makes_compact, faults=faults, gathers=gathers, memo=memo)


def takes_options(op_cls: type) -> bool:
    """Whether the handler of `op_cls` takes the `CpuOptions`."""
    return bool(HANDLERS.facts(op_cls).get("options"))


def takes_lazy(op: Any) -> bool:
    """Whether the handler of `op` takes `LazyRows` operands (its `lazy` fact, or that
    predicate's answer for `op`)."""
    fact = HANDLERS.facts(type(op)).get("lazy", False)
    return bool(fact(op) if callable(fact) else fact)


def takes_compact(op: Any) -> bool:
    """Whether the handler of `op` takes `Compact` operands (its `compact` fact)."""
    return bool(HANDLERS.facts(type(op)).get("compact"))
