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


def laid_out_runs(mem: Sequence[Factor], stream: Sequence[Factor]) -> dict[int, Entry]:
    """Entries of the stream factors (by index in `stream`, joint and outer first) that lay out
    a memory `RaggedFactor` cell for cell; a piece the stream holds as such itself, or whose
    axes other memory pieces, or stream pieces outside one consecutive run, also hold, is left
    to the matcher. A stream piece of such a run moves whole (its padding onto the memory's)."""
    out: dict[int, Entry] = {}
    mem_strides = strides(tuple(mem))
    for i, piece in enumerate(mem):
        if not isinstance(piece, RaggedFactor) or any(f == piece for f in stream):
            continue
        names = set(piece.names)
        if any(_uses(f, names) for j, f in enumerate(mem) if j != i):
            continue
        run = [j for j, f in enumerate(stream) if _uses(f, names)]
        if not run or run != list(range(run[0], run[-1] + 1)):
            continue
        factors = [stream[j] for j in run]
        if not all(isinstance(f, (AxisFactor, RaggedFactor)) for f in factors) or not _cells_agree(piece, factors):
            continue
        inner = 1
        for j, f in zip(reversed(run), reversed(factors)):
            out[j] = Entry(f.extent, mem_strides[i] * inner)
            inner *= f.extent
    for j, piece in enumerate(stream):  # the other way: a stream ragged piece walked by memory digits
        if j in out or not isinstance(piece, RaggedFactor) or any(f == piece for f in mem):
            continue
        names = set(piece.names)
        if any(_uses(f, names) for k, f in enumerate(stream) if k != j):
            continue
        run = [k for k, f in enumerate(mem) if _uses(f, names)]
        if not run or run != list(range(run[0], run[-1] + 1)):
            continue
        factors = [mem[k] for k in run]
        steps = [mem_strides[k] for k in run]
        contiguous = all(steps[n] == steps[n + 1] * factors[n + 1].extent for n in range(len(run) - 1))
        if contiguous and all(isinstance(f, (AxisFactor, RaggedFactor)) for f in factors) \
                and _cells_agree(piece, factors):
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
