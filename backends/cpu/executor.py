"""The cpu executor: walk `Kernel.ops` in program order, one buffer per value.

Each op kind has one small function (`HANDLERS`) taking the op and its operand buffers
and returning the result buffer; buffers are never modified in place, so `view`, an
identity `fetch_cast` and the moves (strided views, backends/cpu/moves_strided.py) may
share them. A buffer is dropped after its last use, which
keeps the peak memory of large kernels down.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ir.errors import InternalError
from ir.kernel import Kernel
from ir.ops import (
    Begin, Cast, Collect, Commit, CommitCast, CommitTrim, ContractLane, ContractOuter,
    ContractPacket, ContractTime, Fetch, FetchCast, FetchTableLookup, FetchZeroPointSub, Op,
    Param, Return, ToDm, ToHbm, ToTrf, View,
)

from backends.cpu import adapters, contract, engines, layout, moves, vector
from ir.vrf_ops import ToVrf
from backends.cpu.options import DEFAULT, CpuOptions
from ir.engine_ops import Switch, Transpose

__all__ = ["HANDLERS", "TAKES_OPTIONS", "execute"]


def _dma(op: ToDm | ToHbm, src: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """Tensor DMA (docs/machine/dma.md): a global move; destination padding is zero."""
    return moves.move_global(src, op.src.type, op.result.type, fast=options.fast_moves)


def _view(op: View, src: np.ndarray) -> np.ndarray:
    """`view()` is the identity on data (docs/machine/fetch.md)."""
    return src


def _begin(op: Begin, dm: np.ndarray) -> np.ndarray:
    """`begin` (docs/machine/fetch.md): the DM buffer as a stream with one time step."""
    return dm.reshape(layout.shape_of(op.result.type))


def _move(op: Fetch | Collect | ToTrf | Commit, src: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """fetch, collect, to_trf and commit: per-slice moves (docs/machine/fetch.md)."""
    return moves.move_local(src, op.input.type, op.result.type, fast=options.fast_moves)


def _commit_trim(op: CommitTrim, src: np.ndarray) -> np.ndarray:
    """commit_trim (docs/machine/commit.md): the leading cells of every packet."""
    return moves.trim(src, op.packet.size)


Handler = Callable[..., Any]

HANDLERS: dict[type[Op], Handler] = {
    ToDm: _dma,
    ToHbm: _dma,
    View: _view,
    Begin: _begin,
    Fetch: _move,
    FetchTableLookup: adapters.fetch_table_lookup,
    FetchCast: adapters.fetch_cast,
    FetchZeroPointSub: adapters.fetch_zero_point_sub,
    Collect: _move,
    ToTrf: _move,
    ContractOuter: contract.contract_outer,
    ContractPacket: contract.contract_packet,
    ContractTime: contract.contract_time,
    ContractLane: contract.contract_lane,
    Cast: adapters.cast,
    CommitTrim: _commit_trim,
    CommitCast: adapters.commit_cast,
    Commit: _move,
    Transpose: engines.transpose,
    Switch: engines.switch,
    **vector.HANDLERS,
    ToVrf: _move,
}

TAKES_OPTIONS: frozenset[type[Op]] = frozenset({ToDm, ToHbm, Fetch, Collect, ToTrf, Commit, Cast,
                                                ContractPacket, ContractTime, ToVrf})
"""The ops whose handler also takes the `CpuOptions` (keyword `options`)."""


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
    env: dict[int, Any] = {}
    last = _last_uses(kernel.ops)
    results: tuple[np.ndarray, ...] = ()
    for position, op in enumerate(kernel.ops):
        if isinstance(op, Param):
            env[op.result.id] = params[op.index]
            continue
        args = [env[v.id] for v in op.operands()]
        if isinstance(op, Return):
            results = tuple(args)
            continue
        handler = HANDLERS.get(type(op))
        if handler is None:
            raise InternalError(f"the cpu backend cannot execute `{op.text()}`")
        if type(op) in TAKES_OPTIONS:
            env[op.result.id] = handler(op, *args, options=options)
        else:
            env[op.result.id] = handler(op, *args)
        for v in op.operands():
            if last.get(v.id) == position:
                env.pop(v.id, None)
    return results
