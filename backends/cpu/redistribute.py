"""Redistributions on the cpu backend (docs/machine/topology.md "Redistributions").

Each live target (chip, cluster) takes its source part's cells through the plan's window
(the window's live positions, shifted by the target's offset into the source Element;
padding zero), and the selected tensor then moves into the result's layout like a `to_dm`
(into the write view of `into` like a `to_dm_view`, moved by its runtime start when it has
one). A tile at a runtime start that the plan reads is its `window`'s value already.
"""

from __future__ import annotations

import attrs
import numpy as np

from ir.mapping.cells import Padding
from ir.mapping.live import live_positions
from ir.ops import Value
from ir.redistribute_ops import Redistribute
from ir.view_ops import ToView

from backends.cpu import moves
from backends.cpu.handlers import handles
from backends.cpu.options import DEFAULT, CpuOptions
from backends.cpu.views import to_view

__all__ = ["redistribute"]


@handles(Redistribute, options=True)
def redistribute(op: Redistribute, src: np.ndarray, *into: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """The selected cells of every target's source part, moved into the result's layout."""
    t = op.src.type
    selected_t = attrs.evolve(t, element=op.window)
    live = live_positions(op.window)
    selected = np.zeros_like(src)
    clusters = t.cluster.size
    for target, ((chip, cluster), offset) in enumerate(zip(op.placements, op.cell_offsets)):
        tc, tk = divmod(target, clusters)
        if isinstance(t.chip.cell(tc), Padding) or isinstance(t.cluster.cell(tk), Padding):
            continue
        selected[tc, tk][..., live] = src[chip, cluster][..., live + offset]
    if op.into is None:
        return moves.move_global(selected, selected_t, op.result.type, fast=options.fast_moves)
    write = ToView(src=Value(-1, selected_t), into=op.into, view=op.view, offset=op.offset, result=op.result,
                   start=op.start, start_stride=op.start_stride, start_limit=op.start_limit)
    return to_view(write, selected, *into, options=options)   # the tensor written, and the start when it has one
