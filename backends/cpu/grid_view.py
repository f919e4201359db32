"""A table over a buffer's flat positions read at a grid of digits, as a strided view.

The contraction's plan (backends/cpu/contract_plan.py) reads its operand index tables at
every point of a grid of digits: each digit `k` adds `c * steps[k]` (c < sizes[k]) to the
flat position. The table is either a full contiguous array (any grid is then one strided
view of it, stride `steps[k]` cells) or held per digit of a factor form (one axis per
factor digit, C order over them the flat order, broadcast along digits it does not depend
on: `moves.match_factored`); then the grid is a view when the two digit systems refine
each other (every boundary of one divides the next of the union) and each grid digit reads
its factor digits with one stride. Where they do not, the table is copied out whole once
and read as the first kind. No index array of the grid's size is made either way (issue
61, first-run memory: on a `k`-first bf16 kernel the TRF index of every grid point was
16 MiB, its values repeated 128 times).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = ["on_grid"]


def on_grid(table: np.ndarray, steps: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    """`table` (flat order its C order) at every grid point: a read-only view of shape
    `sizes`, position `sum(c[k] * steps[k])` (a step of 0: a digit the table's positions
    do not vary along)."""
    strides = _factor_strides(table, steps, sizes)
    if strides is None:
        table = np.ascontiguousarray(table).reshape(-1)
        strides = tuple(s * table.itemsize for s in steps)
    return as_strided(table, sizes, strides, writeable=False)


def _factor_strides(table: np.ndarray, steps: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The byte strides of the grid's digits over `table`'s axes, or None when a grid digit
    does not read them with one stride (or the digits' positions overlap or pass the table:
    then a sum of positions carries from one digit into another)."""
    shape = table.shape
    flat = [math.prod(shape[j + 1:]) for j in range(len(shape))]  # each axis' step in flat positions
    bounds = {1} | {f for f in flat} | {f * n for f, n in zip(flat, shape)}
    bounds |= {s for s, n in zip(steps, sizes) if s and n > 1} | {s * n for s, n in zip(steps, sizes) if s and n > 1}
    chain = sorted(bounds)
    if any(b % a for a, b in zip(chain, chain[1:])) or chain[-1] > math.prod(shape):
        return None
    ranges = sorted((s, s * n) for s, n in zip(steps, sizes) if s and n > 1)
    if any(hi > lo for (_, hi), (lo, _) in zip(ranges, ranges[1:])):  # digits sharing positions carry
        return None

    def offset(pos: int) -> int:
        return sum(((pos // f) % n) * st for f, n, st in zip(flat, shape, table.strides))
    out = []
    for s, n in zip(steps, sizes):
        one = offset(s) if n > 1 else 0
        if any(offset(c * s) != c * one for c in range(2, n)):
            return None
        out.append(one)
    return tuple(out)
