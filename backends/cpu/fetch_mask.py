"""The cpu backend of `fetch_mask` (docs/machine/fetch-adapter.md): the cells the result
type marks `#{0}` hold zero. It reads them from the mapping's cells; the VISA interpreter
zeroes by the record's mask configuration instead."""

from __future__ import annotations

import numpy as np

from ir.fetch_mask_ops import FetchMask
from ir.mapping.nodes import Pair, PaddingKind

from backends.cpu.handlers import handles

__all__ = ["fetch_mask"]


@handles(FetchMask)
def fetch_mask(op: FetchMask, buf: np.ndarray) -> np.ndarray:
    """Zero every `#{0}` cell of the result's (time; packet)."""
    t = op.result.type
    both = Pair(t.time, t.packet)
    zero = (both.cells(np.arange(both.size)).status == PaddingKind.ZERO).reshape(t.time.size, t.packet.size)
    return np.where(zero, np.zeros((), buf.dtype), buf)
