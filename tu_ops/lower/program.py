"""Program structure of a traced kernel (docs/reference/diagnostics.md, visa/visa.lark item 4).

Each `begin` chain becomes one TU program placed at its sink (its last traced call,
`to_trf` or `commit`); each `to_dm` / `to_hbm` is one DMA step placed at its call. Values
are renumbered: parameters first, then each lowered record's result in body order.
"""

from __future__ import annotations

import sys
from typing import Any

import attrs

from ir import ops as ir
from ir.rf_reshape import RfReshape
from ir.view_ops import Memset, NewTensor, ToView, Window
from ir.errors import InternalError
from ir.gather_ops import Gather, Scatter, Shuffle
from ir.spm_ops import SpmToDm, ToSpm
from ir.redistribute_ops import Redistribute
from ir.runtime_ops import RUNTIME_STEPS
from ir.vrf_ops import ToVrf

__all__ = ["ProgramChain", "Layout", "chains_of", "layout", "lowered_count"]

_ADAPTERS = (ir.FetchTableLookup, ir.FetchCast, ir.FetchZeroPointSub)


@attrs.frozen
class ProgramChain:
    """One `begin ... sink` stream, traced ops in order."""

    ops: tuple[ir.Op, ...]

    @property
    def begin(self) -> ir.Begin:
        return self.ops[0]

    @property
    def fetch(self) -> ir.Fetch:
        return self.ops[1]

    @property
    def adapters(self) -> tuple[ir.Op, ...]:
        return tuple(op for op in self.ops if isinstance(op, _ADAPTERS))

    @property
    def collect(self) -> ir.Collect:
        return next(op for op in self.ops if isinstance(op, ir.Collect))

    @property
    def sink(self) -> ir.Op:
        return self.ops[-1]

    @property
    def context(self) -> str:
        return self.begin.context

    def feed_ops(self) -> tuple[ir.Op, ...]:
        """The traced ops up to `collect`, in order: what the chain's FeedBuffer holds."""
        return self.ops[:self.ops.index(self.collect) + 1]

    def after_collect(self) -> tuple[ir.Op, ...]:
        """The traced ops after `collect`, in order."""
        i = self.ops.index(self.collect)
        return self.ops[i + 1:]

    def first(self, cls: type) -> Any | None:
        """The first op of class `cls` in the chain, or None."""
        return next((op for op in self.ops if isinstance(op, cls)), None)


def lowered_count(chain: ProgramChain) -> int:
    """How many lowered ops the chain becomes: the feed, then one op per stage after
    `collect`, `commit_trim` [+ `commit_cast`] + `commit` counting as one CommitOp and a
    Vector Engine pass as one `vector` record (its `FOLDED` stages are its steps)."""
    rest = [op for op in chain.after_collect()
            if not isinstance(op, (ir.CommitCast, ir.Commit)) and not getattr(op, "FOLDED", False)]
    if "ir.vector.inter_ops" not in sys.modules:  # its class never loaded: no inter-slice reduce was traced,
        return 1 + len(rest)  # and a kernel without one need not load the vector lowering to count none
    from tu_ops.lower.vector_inter import inter_first_without_chain

    return 1 + len(rest) - inter_first_without_chain(chain.after_collect())


def chains_of(kernel: Any) -> dict[int, ProgramChain]:
    """Every chain of the kernel, keyed by the value id of its sink's result."""
    producer = {op.result.id: op for op in kernel.ops if op.result is not None}
    out: dict[int, ProgramChain] = {}
    for op in kernel.ops:
        if not isinstance(op, (ir.ToTrf, ir.Commit, ToVrf)):
            continue
        found = [op]
        while not isinstance(found[-1], ir.Begin):
            src = getattr(found[-1], "input", None)
            if src is None or src.id not in producer:
                raise InternalError(f"{op.text()}: its stream does not start at a `begin`")
            found.append(producer[src.id])
        out[op.result.id] = ProgramChain(tuple(reversed(found)))
    return out


@attrs.frozen
class Layout:
    """The body of the lowered kernel: `steps` in order, each `("dma", op)` or
    `("program", chain)`; `refs` maps a traced value id (parameters, DMA results, TRF and
    committed tensors, views) to its lowered value number; `first_id[k]` is the number of
    step k's first record."""

    steps: tuple[tuple[str, Any], ...]
    refs: dict[int, int]
    first_id: tuple[int, ...]


def layout(kernel: Any, folded: dict[int, ToView] | None = None) -> Layout:
    """Place DMAs at their calls and programs at their sinks; number every value. A `to_view`
    of `folded` (by committed tensor, `tu_ops.lower.commit_view`) is no step: its result is
    the commit's."""
    chains = chains_of(kernel)
    skip = {op.result.id for op in (folded or {}).values()}
    steps: list[tuple[str, Any]] = []
    for op in kernel.ops:
        if op.result is not None and op.result.id in skip:
            continue
        if isinstance(op, (ir.ToDm, ir.ToHbm, NewTensor, ToView, Memset, Gather, Scatter, Shuffle, ToSpm, SpmToDm,
                           Redistribute, RfReshape, *RUNTIME_STEPS)):
            steps.append(("dma", op))
        elif op.result is not None and op.result.id in chains:
            steps.append(("program", chains[op.result.id]))
    refs: dict[int, int] = {}
    for p in kernel.params:
        refs[p.result.id] = p.index
    next_id = len(kernel.params)
    first_id = []
    for kind, item in steps:
        first_id.append(next_id)
        if kind == "dma":
            refs[item.result.id] = next_id
            next_id += 1
            continue
        next_id += lowered_count(item)
        refs[item.sink.result.id] = next_id - 1
    for committed, op in (folded or {}).items():
        refs[op.result.id] = refs[committed]
    for op in kernel.ops:
        if isinstance(op, (ir.View, Window)):  # views name their tensor's storage
            refs[op.result.id] = refs[op.src.id]
    return Layout(tuple(steps), refs, tuple(first_id))
