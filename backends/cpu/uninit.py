"""`UninitTracker`, for `CpuOptions.report_uninit`: report a read of cells that nothing wrote.

A tensor made by `new()` reads as zeros, as the reference's host model has it, but the chip
does not clear memory. With the option on, the executor keeps, for every value made from a
`new()` tensor, which buffer cells were written (`to_view`, `memset` and a redistribution's
`to_dm_view` write their write view's cells, a scatter the rows its index names, in the whole
tensor or in one page of it; `window` and `view` carry the marks along), and refuses with
VIEW-12 any other op that reads a live cell of such a value before a write reached it. The
option never changes a result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ir.errors import RunTimeRefusal
from ir.gather_ops import Scatter
from ir.ops import Op, View
from ir.redistribute_ops import Redistribute
from ir.view_ops import Memset, NewTensor, ToView, Window

from backends.cpu.gather import scatter
from backends.cpu.views import _grid, _shifted

__all__ = ["UninitTracker", "uninit_tracker"]

# The ops that write into an existing tensor `into` (its new contents are their result).
_WRITERS = (ToView, Memset, Redistribute, Scatter)


class UninitTracker:
    """Written-cell marks of the values derived from `new()` tensors."""

    def __init__(self) -> None:
        self.written: dict[int, np.ndarray] = {}

    def before(self, op: Op) -> None:
        """Refuse `op` if it reads a cell of a tracked value that nothing wrote."""
        if isinstance(op, (Window, View)):
            return  # naming cells reads none; the reader of the view is checked
        targets = {op.into.id} if isinstance(op, _WRITERS) and op.into is not None else set()
        for v in op.operands():
            marks = self.written.get(v.id)
            if marks is None or v.id in targets:
                continue
            unread = ~marks[_grid(v.type)]
            if unread.any():
                where = f"{op.loc.file}:{op.loc.line}: " if op.loc is not None else ""
                raise RunTimeRefusal(f"{where}`{op.STAGE}` reads {int(unread.sum())} cell(s) of {v} that nothing "
                                  f"wrote (a tensor made by new() is not cleared on the chip)", code="VIEW-12")

    def after(self, op: Op, shape: tuple[int, ...], env: dict[int, Any] | None = None,
              args: Sequence[Any] = ()) -> None:
        """Record the marks of `op`'s result (`env`: the values, for a runtime tile start;
        `args`: the operands its handler took, for a scatter's index)."""
        if isinstance(op, NewTensor):
            self.written[op.result.id] = np.zeros(shape, bool)
        elif isinstance(op, View) and op.src.id in self.written:
            self.written[op.result.id] = self.written[op.src.id]
        elif isinstance(op, Window) and op.src.id in self.written:
            marks = np.zeros(shape, bool)
            marks[_grid(op.result.type)] = self.written[op.src.id][_grid(op.result.type, _offset(op, env))]
            self.written[op.result.id] = marks
        elif isinstance(op, _WRITERS) and op.into is not None and op.into.id in self.written:
            marks = self.written[op.into.id].copy()
            if isinstance(op, Scatter):   # the rows its index names: the scatter itself, of ones over the marks
                data, index, _, *start = args
                marks = scatter(op, np.ones(np.shape(data), np.uint8), index, marks.astype(np.uint8), *start).astype(bool)
            elif op.view is None:         # a redistribution into the whole tensor
                marks[...] = True
            else:                         # the write view's cells
                marks[_grid(op.view, _offset(op, env))] = True
            self.written[op.result.id] = marks


def _offset(op: Any, env: dict[int, Any] | None) -> tuple[int, ...]:
    """The op's cell offsets, the element's moved by its runtime tile start (checked by its handler)."""
    start = getattr(op, "start", None)
    return _shifted(op, None if start is None or env is None else env[start.id], "")


def uninit_tracker(options: Any) -> UninitTracker | None:
    """A tracker when the options ask for one."""
    return UninitTracker() if getattr(options, "report_uninit", False) else None
