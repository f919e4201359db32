"""cpu handlers of `new`, `window`, `to_view` and `memset` (docs/views.md): offsets per level.

A buffer has one numpy axis per level (backends/cpu/layout.py); a view names, on every
level, the positions `p + offset` of its base for the live positions `p` of its own
mapping, and padding cells hold zero. The live positions of a level come from its factor
form (a pure padding factor holds data at its first cell only), so no cell table is built.
"""

from __future__ import annotations

import numpy as np

from ir.mapping.live import live_positions
from ir.rules.views import fill_pattern
from ir.view_ops import Memset, NewTensor, ToView, Window

from backends.cpu import layout, moves
from backends.cpu.options import DEFAULT, CpuOptions
from backends.cpu.handlers import handles

__all__: list[str] = []


def _grid(t: object, offsets: tuple[int, ...] | None = None) -> tuple[np.ndarray, ...]:
    live = [live_positions(mp) for mp in t.levels()]  # type: ignore[attr-defined]
    if offsets is not None:
        live = [p + o for p, o in zip(live, offsets)]
    return np.ix_(*live)


@handles(NewTensor)
def new(op: NewTensor) -> np.ndarray:
    """A tensor of zeros."""
    t = op.result.type
    return np.zeros(layout.shape_of(t), layout.storage_dtype(t.dtype))


@handles(Window)
def window(op: Window, base: np.ndarray) -> np.ndarray:
    """The base's cells at the view's live positions shifted by the offsets; padding zero."""
    t = op.result.type
    out = np.zeros(layout.shape_of(t), base.dtype)
    out[_grid(t)] = base[_grid(t, op.offset)]
    return out


@handles(ToView, options=True)
def to_view(op: ToView, src: np.ndarray, into: np.ndarray, options: CpuOptions = DEFAULT) -> np.ndarray:
    """A DMA of `src` into the view's type, written over `into` at the view's live cells."""
    moved = moves.move_global(src, op.src.type, op.view, fast=options.fast_moves)
    out = into.copy()
    out[_grid(op.view, op.offset)] = moved[_grid(op.view)]
    return out


@handles(Memset)
def memset(op: Memset, into: np.ndarray) -> np.ndarray:
    """The live cells of the view set to the fill value; every other cell kept."""
    out = into.copy()
    bits = np.asarray(fill_pattern(op.value, op.view.dtype), op.view.dtype.bits_dtype)
    out[_grid(op.view, op.offset)] = bits if op.view.dtype.is_float else bits.view(op.view.dtype.host_dtype)
    return out


