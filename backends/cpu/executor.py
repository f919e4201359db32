"""The cpu executor: walk `Kernel.ops` in program order, one buffer per value.

Each op kind has one small function, declared with `@handles` (backends/cpu/handlers.py)
in the module that holds it, taking the op and its operand buffers and returning the
result buffer; buffers are never modified in place, so `view`, an
identity `fetch_cast` and the moves (strided views, backends/cpu/moves_strided.py) may
share them. A buffer is dropped after its last use, which
keeps the peak memory of large kernels down.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ir.errors import InternalError
from ir.kernel import Kernel
from ir.ops import (
    Begin, Collect, Commit, CommitTrim,
    Fetch, Op,
    Final, Param, Return, ToDm, ToHbm, ToTrf, View,
)

from ir.vrf_ops import ToVrf

from backends.cpu import layout, lazy_rows, moves, uninit
from backends.cpu.handlers import HANDLERS, handles, takes_options
from backends.cpu.options import DEFAULT, CpuOptions

__all__ = ["execute", "execute_inout"]


@handles(ToDm, ToHbm, options=True)
def _dma(op: ToDm | ToHbm, src: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """Tensor DMA (docs/machine/dma.md): a global move; destination padding is zero."""
    return moves.move_global(src, op.src.type, op.result.type, fast=options.fast_moves)


@handles(View)
def _view(op: View, src: np.ndarray) -> np.ndarray:
    """`view()` is the identity on data (docs/machine/fetch.md)."""
    return src


@handles(Begin)
def _begin(op: Begin, dm: np.ndarray) -> np.ndarray:
    """`begin` (docs/machine/fetch.md): the DM buffer as a stream with one time step."""
    return dm.reshape(layout.shape_of(op.result.type))


@handles(Fetch, Collect, ToTrf, Commit, ToVrf, options=True)
def _move(op: Fetch | Collect | ToTrf | Commit | ToVrf, src: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """fetch, collect, to_trf and commit: per-slice moves (docs/machine/fetch.md)."""
    return moves.move_local(src, op.input.type, op.result.type, fast=options.fast_moves, lazy=options.fast_moves)


@handles(CommitTrim)
def _commit_trim(op: CommitTrim, src: np.ndarray) -> np.ndarray:
    """commit_trim (docs/machine/commit.md): the leading cells of every packet."""
    return moves.trim(src, op.packet.size)




def _last_uses(ops: Sequence[Op]) -> dict[int, int]:
    """Value id -> position of the op that reads it last."""
    last: dict[int, int] = {}
    for position, op in enumerate(ops):
        for v in op.operands():
            last[v.id] = position
    return last


def execute(kernel: Kernel, params: Sequence[np.ndarray],
            options: CpuOptions = DEFAULT) -> tuple[np.ndarray, ...]:
    """Run a trace-valid kernel on HBM parameter buffers (in parameter order); returns the
    HBM buffers of its results, in order. `options` choose how, never what."""
    return execute_inout(kernel, params, options)[0]


def execute_inout(kernel: Kernel, params: Sequence[np.ndarray],
                  options: CpuOptions = DEFAULT) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """`execute`, also returning the final HBM buffer of every in-out parameter (its
    `final` op), in parameter order."""
    env: dict[int, Any] = {}
    last = _last_uses(kernel.ops)
    results: tuple[np.ndarray, ...] = ()
    finals: list[np.ndarray] = []
    marks = uninit.tracker(options)
    for position, op in enumerate(kernel.ops):
        if isinstance(op, Param):
            env[op.result.id] = params[op.index]
            continue
        operands = op.operands()
        if not lazy_rows.accepts(op):  # a move not copied yet is copied for this consumer, once
            for v in operands:
                env[v.id] = lazy_rows.materialize(env[v.id])
        args = [env[v.id] for v in operands]
        if marks is not None:
            marks.before(op)
        if isinstance(op, Return):
            results = tuple(args)
            continue
        if isinstance(op, Final):
            finals.append(args[1])
            env[op.result.id] = args[1]
            continue
        handler = HANDLERS.get(type(op))
        if handler is None:
            raise InternalError(f"the cpu backend cannot execute `{op.text()}`")
        if takes_options(type(op)):
            env[op.result.id] = handler(op, *args, options=options)
        else:
            env[op.result.id] = handler(op, *args)
        if marks is not None:
            marks.after(op, np.shape(env[op.result.id]))
        for v in operands:
            if last.get(v.id) == position:
                env.pop(v.id, None)
    return results, tuple(finals)
