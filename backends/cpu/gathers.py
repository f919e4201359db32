"""The cells a contraction's operand layout reads (`Gather`, made by
backends/cpu/contract_plan.py) and the test that a block of cell offsets is affine (then
read as a strided view: contract_plan and a lazy move, backends/cpu/lazy_rows.py)."""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu.moves_strided import check_block

__all__ = ["Gather", "cells_view"]


@attrs.frozen(eq=False)
class Gather:
    """The cells an operand layout reads. `digits` (one per axis of `shape`, outer to
    inner), merged into `groups`; `index` the flat cell of every position (C order), or
    when affine `offset` + sum(digit * `strides`) (then read as a strided view)."""

    digits: tuple[int, ...]
    shape: tuple[int, ...]
    groups: tuple[int, ...]
    held: np.ndarray | None = attrs.field(alias="index")  # None when affine: made on each reading
    offset: int | None
    strides: tuple[int, ...] | None

    @property
    def index(self) -> np.ndarray:
        """The flat cell of every position (C order); an affine gather's made on each reading
        and not kept (kept in the plan cache, it was 2 MiB on drawn_s1_3: issue 61)."""
        if self.held is not None:
            return self.held
        assert self.offset is not None and self.strides is not None  # held when not affine
        return affine_cells(self.offset, self.strides, self.shape).reshape(-1)

    @property
    def size(self) -> int:
        """Positions read (`index.size`, the index not made)."""
        return self.held.size if self.held is not None else math.prod(self.shape)


def cells_view(raw: np.ndarray, gather: Gather) -> np.ndarray:
    """The operand's cells over its layout, (rows, *shape): a strided view when affine."""
    rows = raw.shape[0]
    if gather.offset is not None:
        item = raw.itemsize
        return as_strided(raw[:, gather.offset:], shape=(rows, *gather.shape),
                          strides=(raw.strides[0], *(s * item for s in gather.strides)),
                          writeable=False)
    return raw[:, gather.index].reshape(rows, *gather.shape)



def _coord(k: int, size: int, nd: int) -> np.ndarray:
    shape = [1] * nd
    shape[k] = size
    return np.arange(size, dtype=np.int64).reshape(shape)


def affine_cells(offset: int, strides: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """offset + sum(coordinate * stride) over `shape` (C order), in int32 when it fits."""
    top = offset + sum((n - 1) * st for n, st in zip(shape, strides))
    dtype = np.int32 if top <= np.iinfo(np.int32).max else np.int64
    out = np.full((1,) * len(shape), offset, dtype)
    for k, (n, st) in enumerate(zip(shape, strides)):
        out = out + (_coord(k, n, len(shape)) * st).astype(dtype)
    return np.ascontiguousarray(np.broadcast_to(out, shape))


def _affine(fine: np.ndarray,
            values: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[int, tuple[int, ...]] | None:
    """(offset, strides) when every cell of `fine` is offset + sum(coordinate * stride)
    with non-negative strides; None otherwise. `values`: the numbers checked are not the
    cells but `values(cells)`, asked of a block of cells at a time (no number of every
    cell is made)."""
    value = (lambda cells: cells) if values is None else values
    shape = fine.shape
    corners = [(0,) * len(shape)]
    for k, n in enumerate(shape):
        unit = [0] * len(shape)
        unit[k] = 1 if n > 1 else 0
        corners.append(tuple(unit))
    found = [int(v) for v in value(np.array([fine[c] for c in corners]))]
    base, steps = found[0], [v - found[0] for v in found[1:]]
    if min(steps, default=0) < 0:
        return None
    # compared a block of trailing axes at a time (`fine` may be a broadcast view): no table of
    # every cell beside it (issue 61, first-run memory: 4 MiB of int64 on drawn_s1_3's 2 MiB index)
    most = min(_CHECK_BLOCK, check_block(fine.size))  # a small layout's first plan: small blocks (issue 61)
    cut = max(len(shape) - 1, 0)  # the leading axes looped over, the rest compared at once
    while cut > 0 and math.prod(shape[cut - 1:]) <= most:
        cut -= 1
    tail = sum((_coord(k, n, len(shape) - cut) * s for k, (n, s) in enumerate(zip(shape[cut:], steps[cut:]))),
               np.zeros((1,) * (len(shape) - cut), np.int64))
    tail = np.broadcast_to(tail, shape[cut:])
    for head in np.ndindex(*shape[:cut]):
        at = base + sum(h * s for h, s in zip(head, steps))
        if not np.array_equal(value(fine[head]), tail + at):
            return None
    return base, tuple(steps)


_CHECK_BLOCK = 1 << 16
"""The most cells `_affine` compares at a time (at least one trailing axis; fewer in a
small layout: `moves_strided.check_block`)."""
