"""Redistributions on the cpu backend (docs/machine/topology.md "Redistributions").

Each live target (chip, cluster) takes its source part's cells through the plan's window
(the window's live positions, shifted by the target's offset into the source Element;
padding zero), and the selected tensor then moves into the result's layout like a `to_dm`.
"""

from __future__ import annotations

import attrs
import numpy as np

from ir.mapping.cells import Padding
from ir.mapping.live import live_positions
from ir.redistribute_ops import Redistribute

from backends.cpu import moves
from backends.cpu.handlers import handles
from backends.cpu.options import DEFAULT, CpuOptions

__all__ = ["redistribute"]


@handles(Redistribute, options=True)
def redistribute(op: Redistribute, src: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
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
    return moves.move_global(selected, selected_t, op.result.type, fast=options.fast_moves)
