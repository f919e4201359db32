"""The live positions of a mapping (the positions holding a cell, not padding), from its
factor form: a pure padding factor holds a cell at its first position only, a ragged factor
where its table says, every other factor at all of its positions. No cell table is built."""

from __future__ import annotations

import functools

import numpy as np

from ir.mapping.cells import Padding
from ir.mapping.factors import PaddingFactor, RaggedFactor
from ir.mapping.nodes import Mapping

__all__ = ["live_positions"]


@functools.lru_cache(maxsize=256)
def live_positions(mapping: Mapping) -> np.ndarray:
    """The positions of `mapping` that hold a cell (not padding), ascending."""
    mask = np.ones(1, bool)
    for f in mapping.factors():
        if isinstance(f, PaddingFactor):
            part = np.zeros(f.extent, bool)
            part[0] = True
        elif isinstance(f, RaggedFactor):
            part = np.array([not isinstance(c, Padding) for c in f.cells], bool)
        else:
            part = np.ones(f.extent, bool)
        mask = (mask[:, None] & part[None, :]).reshape(-1)
    return np.flatnonzero(mask)
