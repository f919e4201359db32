"""The Transpose Engine on a broadcast's distinct rows (issue 61: the drawn kernels that store
an operand `k` first and turn it on the device, `transpose=device`).

Such a kernel copies each block of the operand into many slices (a DMA broadcast, held by
visa/interp/fast/lazy.py as its distinct rows), feeds it to the Transpose Engine and commits
the result into DM, where a later program reads it. Every slice holding the same block
turns it alike, so the chain keeps the distinct rows only:

- `feed_rows`: a feed into the Transpose Engine whose bytes lie in one lazy region of every
  group reads each distinct row once (the feed then pads, converts and collects those rows
  only) and gives a sparse `Repeated` (visa/interp/fast/repeated.py: the other rows name the
  row they repeat);
- `transpose_rows`: the engine turns the stored rows of a sparse `Repeated` only, and
  keeps each output flit's turned cells, not its padding (`Turned`: a `drawn_s1_3` block
  fills 4 of a flit's 16 cells, so the padded rows were 4x the turned data);
- `commit_rows`: a commit of a sparse `Repeated` that writes every byte of its new tensor in
  each slice writes the distinct rows once and holds the tensor as a lazy region of those
  rows (`Dm.hold`), which the next program's feed reads through (`feed._repeated`) and any
  other access writes out first.

On `drawn_s1_4` (i8, `w[k,n]`, 64 live slices) the engine turned 64 slices' blocks; it now
turns 4. Every refusal (a stream of another form, a read outside one lazy region, a write
plan that is not one dense byte range a slice) leaves the plain path, which computes the
same bits.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from visa.interp.fast.repeated import Repeated
from visa.interp.dm import Lazy
from visa.interp.shortcuts import register
from visa.interp.strided import flat_walk, runs_as_items, view
from visa.interp.values import from_raw, raw_dtype, value_dtype

__all__ = ["Turned", "feed_rows", "transpose_rows", "commit_rows", "held_stream"]


@register("feed_lazy_rows")
def feed_rows(op: Any, rows: Any, mem: Any, base: int, plan: tuple[int, int, list[int], list[int]],
              bits: int) -> tuple[np.ndarray, Callable[[np.ndarray], Repeated]] | None:
    """(the values of the distinct rows (distinct, steps, elements), the function that holds
    the stream the feed makes of them (padded and collected) as a sparse `Repeated`) of a
    plain feed into the Transpose Engine of the tensor at byte `base` of each slice, when each (chip,
    cluster) group's read lies in one lazy region (`Dm.lazy_view`) and some rows repeat;
    None otherwise."""
    if (op.dest.kind.name != "TRANSPOSE" or bits < 8 or op.interleave is not None or op.lift is not None
            or op.switch is not None):
        return None
    steps, elems, sizes, strides = plan
    w = bits // 8
    base += op.source.offset * w
    end = base + sum((n - 1) * st * w for n, st in zip(sizes, strides)) + w
    parts, helds, stored = [], [], []
    for (chip, cluster), sel, slices, _ in rows.slice_groups():
        dm = mem.dm(chip, cluster)
        found = dm.lazy_view(base, end, np.asarray(slices, np.int64), sizes, [st * w for st in strides],
                             raw_dtype(bits)) if dm.lazy else None
        if found is None:
            return None
        source, which = found
        used, first, inverse = np.unique(which, return_index=True, return_inverse=True)
        parts.append(source[used].reshape(len(used), steps, elems))
        helds.append(first[inverse.reshape(-1)] + int(sel[0]))
        stored.append(first + int(sel[0]))
    held, kept = np.concatenate(helds), np.concatenate(stored)
    if kept.size == held.size:  # no row repeats another
        return None
    values = from_raw(np.concatenate(parts), op.source.dtype, bits).astype(value_dtype(op.source.dtype), copy=False)
    return values, lambda stream: held_stream(stream, held, kept, mem.scratch)


def held_stream(values: np.ndarray, held: np.ndarray, stored: np.ndarray, scratch: Callable[..., np.ndarray]) -> Repeated:
    """The stream whose rows `stored` are `values` (in order) and whose other rows repeat
    their `held` row, as a sparse `Repeated` (only the stored rows written). Its scratch
    array counts the stored rows' bytes only (`Memory.scratch`): counted whole, a 64-MiB
    stream of 8 MiB written (`drawn_s2_3`) pushed the DM store out of the pool, and every
    run paid fresh pages."""
    full = scratch((held.size, *values.shape[1:]), values.dtype, values.nbytes)
    full[stored] = values
    return Repeated(full, full.shape, held, True)


def _stored(stream: Any) -> np.ndarray | None:
    """The stored rows of a sparse `Repeated` stream, else None."""
    if not (isinstance(stream, Repeated) and stream.sparse and stream.held is not None):
        return None
    return np.flatnonzero(stream.held == np.arange(stream.held.size))


class Turned(Repeated):
    """The Transpose Engine's result on a broadcast's distinct rows, without its padding:
    `cells` (stored rows, steps, c) the first c cells of every flit of the rows `stored`
    (in order), every other cell of a flit zero, row r repeating row held[r]. A sparse
    `Repeated` to every reader: `factored` writes the padded rows out the first time one
    asks for it; `commit_rows` reads `cells` as they are."""

    def __init__(self, cells: np.ndarray, flit: int, held: np.ndarray, stored: np.ndarray,
                 scratch: Callable[..., np.ndarray]) -> None:
        self.cells, self.stored = cells, stored
        self.shape = (held.size, cells.shape[1], flit)
        self.dtype = cells.dtype
        self.held, self.sparse, self.alias = held, True, None
        self._scratch, self._padded = scratch, None

    @property
    def factored(self) -> np.ndarray:   # type: ignore[override]
        """The stream's rows (only the stored ones written), padded to whole flits."""
        if self._padded is None:
            c = self.cells.shape[-1]
            full = self._scratch(self.shape, self.dtype, self.cells.nbytes * self.shape[-1] // c)
            full[self.stored, :, :c] = self.cells
            full[self.stored, :, c:] = 0
            self._padded = full
        return self._padded


@register("transpose_rows")
def transpose_rows(op: Any, stream: Any, mem: Any, run: Callable[..., np.ndarray]) -> Repeated | None:
    """The Transpose Engine (`run`, visa/interp/engines.py's) on the stored rows of a sparse
    `Repeated` stream, their written cells only (`run(..., cells_only=True)`), held as a
    `Turned` with the same rows repeated; None for any other stream."""
    stored = _stored(stream)
    if stored is None:
        return None
    full = np.ascontiguousarray(stream.factored).reshape(stream.shape)
    return Turned(run(op, full[stored], cells_only=True), stream.shape[-1], stream.held, stored, mem.scratch)


@register("commit_rows")
def commit_rows(op: Any, stream: Any, rows: Any, n_slices: int, size: int, bits: int,
                encode: Callable[[np.ndarray], np.ndarray]) -> list[tuple[tuple[int, int], Lazy]] | None:
    """The lazy DM regions ((chip, cluster), `Lazy`) a commit of a sparse `Repeated` stream
    leaves (a DM of `n_slices` slices), its write plan writing every byte of the tensor's `size` bytes (from the
    commit's `dest`, the tensor's address) once in each slice: each group's distinct rows
    written once through the plan (`encode`: the stream's rows -> the raw elements written).
    None for another stream, a row repeating a row of another group, or a plan that is no
    in-bounds strided walk."""
    stored = _stored(stream)
    if stored is None or bits < 8:
        return None
    w, entries = bits // 8, [*op.write.time, *op.write.packet]
    if isinstance(stream, Turned) and math.prod(e.size for e in op.write.packet) <= stream.cells.shape[-1]:
        def rows_of(used: np.ndarray) -> np.ndarray:   # the cells the commit keeps are turned ones
            return stream.cells[np.searchsorted(stream.stored, used)]
    else:
        full = np.ascontiguousarray(stream.factored).reshape(stream.shape)

        def rows_of(used: np.ndarray) -> np.ndarray:
            return full[used]
    out = []
    for key, sel, slices, _ in rows.slice_groups():
        held = stream.held[sel]
        if int(held.min()) < int(sel[0]) or int(held.max()) > int(sel[-1]):
            return None
        used, which = np.unique(held, return_inverse=True)
        data = np.empty((used.size, size), np.uint8)   # every byte written below
        sizes = [used.size, *(e.size for e in entries)]
        walk = flat_walk(data, 0, sizes, [size, *(e.stride * w for e in entries)], w)
        target = None if walk is None else view(walk, sizes, raw_dtype(bits))
        if target is None:
            return None
        np.copyto(*runs_as_items(target, encode(rows_of(used)).reshape(sizes)))   # a packet's cells as one item
        at = np.full(n_slices, -1, np.int64)   # each of the DM's slices' row (-1: none)
        at[slices] = which.reshape(-1)
        out.append((key, Lazy(op.dest, op.dest + size, np.asarray(slices, np.int64), at, data)))
    return out
