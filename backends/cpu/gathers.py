"""The cells a contraction's operand layout reads (`Gather`, made by
backends/cpu/contract_plan.py) and the test that a block of cell offsets is affine (then
read as a strided view: contract_plan and a lazy move, backends/cpu/lazy_rows.py)."""

from __future__ import annotations

import math

import attrs
import numpy as np

__all__ = ["Gather"]


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


def _affine(fine: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
    """(offset, strides) when every cell of `fine` is offset + sum(coordinate * stride)
    with non-negative strides; None otherwise."""
    shape = fine.shape
    base = int(fine.reshape(-1)[0])
    steps = []
    for k, n in enumerate(shape):
        unit = [0] * len(shape)
        unit[k] = 1 if n > 1 else 0
        steps.append(int(fine[tuple(unit)]) - base)
    expected = base + sum((_coord(k, n, len(shape)) * s for k, (n, s) in enumerate(zip(shape, steps))),
                          np.zeros((1,) * len(shape), np.int64))
    if min(steps, default=0) >= 0 and np.array_equal(np.broadcast_to(expected, shape), fine):
        return base, tuple(steps)
    return None
