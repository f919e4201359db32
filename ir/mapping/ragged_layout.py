"""A memory ragged piece laid out cell for cell by a run of stream digits (`sequence`'s helper).

A padded axis whose digits sit apart in memory (`R # 8 % 4, R # 8 / 4`, or `R # 16 / 8, Y,
R # 16 / 2 % 4, R # 16 % 2` with |R| = 13) has no factor form digit by digit: memory holds it
as one irregular `RaggedFactor`, whose padding depends on several digits at once. A stream
that spells the same digits as plain digit ranges, one after another in the same order (its
levels split the run: `R # 8 % 4` over Slice, `R # 8 / 4` in Element), walks that piece
position for position: run index j reads the piece's cell j wherever that cell is live, and
decodes the axis past its size (a padding cell of the stream's joint mapping) wherever it is
padding. Each digit of the run then steps through memory at the piece's stride times the
extent of the digits inner to it in the run, padding landing on padding. The other way round
(memory holds the digits, the stream the ragged piece) the piece is one loop when the memory's
run is contiguous.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ir.mapping.cells import LIVE
from ir.mapping.factors import AxisFactor, Factor, RaggedFactor
from ir.mapping.ops import Entry, strides

__all__ = ["laid_out_runs"]


def _uses(f: Factor, names: set[str]) -> bool:
    if isinstance(f, AxisFactor):
        return f.axis in names
    return isinstance(f, RaggedFactor) and bool(names & set(f.names))


def _walking_run(piece: Factor, own: Sequence[Factor], at: int, other: Sequence[Factor]) -> list[int] | None:
    """The indices in `other` of the consecutive run of digit pieces that walks ragged `piece`
    (at index `at` of `own`) cell for cell, or None: no such run, the piece held as it is on
    the other side, or its axes held elsewhere too."""
    if not isinstance(piece, RaggedFactor) or any(f == piece for f in other):
        return None
    names = set(piece.names)
    if any(_uses(f, names) for k, f in enumerate(own) if k != at):
        return None
    run = [k for k, f in enumerate(other) if _uses(f, names)]
    if not run or run != list(range(run[0], run[-1] + 1)):
        return None
    factors = [other[k] for k in run]
    if not all(isinstance(f, (AxisFactor, RaggedFactor)) for f in factors) or not _cells_agree(piece, factors):
        return None
    return run


def laid_out_runs(mem: Sequence[Factor], stream: Sequence[Factor]) -> dict[int, Entry]:
    """Entries of the stream factors (by index in `stream`, joint and outer first) that lay out
    a memory `RaggedFactor` cell for cell, each at the piece's stride times the extent inner
    to it in the run, and of a stream `RaggedFactor` that a contiguous run of memory digits
    lays out; the rest is left to the matcher. Such a piece moves whole, padding onto padding."""
    out: dict[int, Entry] = {}
    mem_strides = strides(tuple(mem))
    for i, piece in enumerate(mem):
        run = _walking_run(piece, mem, i, stream)
        inner = 1
        for j in reversed(run or ()):
            out[j] = Entry(stream[j].extent, mem_strides[i] * inner)
            inner *= stream[j].extent
    for j, piece in enumerate(stream):  # the other way: a stream ragged piece walked by memory digits
        run = None if j in out else _walking_run(piece, stream, j, mem)
        if run is None:
            continue
        steps = [mem_strides[k] for k in run]
        if all(steps[n] == steps[n + 1] * mem[run[n + 1]].extent for n in range(len(run) - 1)):
            out[j] = Entry(piece.extent, steps[-1])
    return out


def _cells(f: AxisFactor | RaggedFactor) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(live flags, coordinates per axis) of the factor's cells."""
    if isinstance(f, AxisFactor):
        return np.ones(f.extent, bool), {f.axis: np.arange(f.extent) * f.step}
    mat = f.matrix
    return mat[:, 0] == LIVE, {name: mat[:, 1 + k] for k, name in enumerate(f.names)}


def _cells_agree(piece: RaggedFactor, factors: list[AxisFactor | RaggedFactor]) -> bool:
    """Whether the run `factors` (outer first) walks `piece` position for position: at its live
    cells a live cell of the same coordinates, at its padding cells padding (a padding cell of a
    ragged factor of the run, or an axis decoded past its size)."""
    if int(np.prod([f.extent for f in factors])) != piece.extent:
        return False
    index = np.arange(piece.extent)
    live = np.ones(piece.extent, bool)
    coords: dict[str, np.ndarray] = {}
    sizes = {f.axis: f.axis_size for f in factors if isinstance(f, AxisFactor)}
    inner = piece.extent
    for f in factors:
        inner //= f.extent
        digit = index // inner % f.extent
        flags, cs = _cells(f)
        live &= flags[digit]
        for name, c in cs.items():
            coords[name] = coords.get(name, 0) + c[digit]
    for name, c in coords.items():
        if name in sizes:
            live &= c < sizes[name]
    mat = piece.matrix
    mem_live = mat[:, 0] == LIVE
    if not np.array_equal(live, mem_live) or set(piece.names) - set(coords):
        return False
    return all(np.array_equal(np.asarray(coords[name])[mem_live], mat[mem_live, 1 + k])
               for k, name in enumerate(piece.names)) and not any(
        np.any(np.asarray(c)[mem_live]) for name, c in coords.items() if name not in piece.names)
