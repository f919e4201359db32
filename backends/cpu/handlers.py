"""The cpu handler of each traced op class, filled by declaration.

A module of `backends.cpu` declares `@handles(ir.SomeOp)` on a function `(op, *operand
buffers) -> result buffer`; `options=True` when it also takes the `CpuOptions` (keyword
`options`), which choose how it computes, never what. The executor loads every module of
the package before its first lookup, so a new engine adds its handler in its own module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ir.declare import Table

__all__ = ["HANDLERS", "handles", "takes_options"]

HANDLERS = Table("cpu handler", package="backends.cpu")


def handles(*op_classes: type, options: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare `fn` as the cpu handler of `op_classes`."""
    return HANDLERS.declare(*op_classes, options=options)


def takes_options(op_cls: type) -> bool:
    """Whether the handler of `op_cls` takes the `CpuOptions`."""
    return bool(HANDLERS.facts(op_cls).get("options"))
