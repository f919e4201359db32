"""`begin_interleaved` on cpu buffers: the two DM buffers side by side along the begun
element's outermost axis (`I, Element`), as one stream of one time step."""

from __future__ import annotations

import numpy as np

from ir.interleave_ops import BeginInterleaved

from backends.cpu import layout
from backends.cpu.handlers import handles

__all__: list[str] = []


@handles(BeginInterleaved)
def _begin_interleaved(op: BeginInterleaved, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    rows = lhs.shape[:3]
    both = np.concatenate([lhs.reshape(*rows, -1), rhs.reshape(*rows, -1)], axis=-1)
    return both.reshape(layout.shape_of(op.result.type))


