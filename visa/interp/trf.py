"""`trf_load` records and the TRF side of `contract_outer` (docs/machine/collect.md).

A load stores the `beats * collect_flits` flits of its feed, `bytes_per_lane / 32` flits
per lane, lane after lane, into rows `first, first + 1, ...` of each lane, where `first`
is the region's first row plus `base_row` (rows are 32 bytes; a lane of an `L`-lane
tensor is the `TRF_BYTES / L` bytes from `l * TRF_BYTES / L`). The bytes are the
elements' byte image; `cell_format` says how a read decodes them (`INT9`: a
sign-extended `i8`, `INT5`: a sign-extended `i4` nibble, `BF16_16`, `F8_8`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from visa.interp.errors import check
from visa.interp.memory import Memory
from visa.interp.shortcuts import Held, shortcut
from visa.interp.strided import view_reshape
from visa.interp.rows import Rows
from visa.interp.steps import ProgramState, runs
from visa.interp.values import CELL_DTYPES, from_raw, raw_dtype, to_bytes, value_dtype

__all__ = ["TrfTensor", "run_trf_load", "read_weights", "weight_rows", "check_read", "take"]


class TrfTensor:
    """A loaded TRF tensor: its load record and the first row its readers use in each lane
    (the visa/visa.lark allocation; the load itself writes from `base_row`)."""

    def __init__(self, op: Any, first_row: int, lane_bytes: int) -> None:
        self.op = op
        self.lanes = op.lanes
        self.first_row = first_row
        self.lane_bytes = lane_bytes          # bytes of one lane of the TRF for this lane count

    def __repr__(self) -> str:
        return f"TrfTensor(lanes={self.lanes}, first_row={self.first_row})"


def run_trf_load(op: Any, stream: np.ndarray | Held, rows: Rows, mem: Memory) -> TrfTensor:
    """Store the fed flits into the TRF of every live slice (a `Repeated` stream, e.g. a
    view of the DM bytes, straight from where it is held)."""
    target = mem.target
    et = op.element_type.dtype
    bits = target.bits_of(et) or 0
    check(bits in (4, 8, 16, 32), f"element type {op.element_type} has no byte layout", op)
    check(stream.dtype == value_dtype(et), f"the feed does not deliver {op.element_type} elements", op)
    row = np.dtype((np.void, mem.row_bytes))      # a row moves as one element: one copy, not 32 byte steps
    lanes, per_lane = op.lanes, op.bytes_per_lane
    nrows = per_lane // mem.row_bytes
    held = stream.trf_rows_view(bits, row, lanes, nrows) if isinstance(stream, Held) else None
    stored = None if held is None else stream.stored_rows()
    flits = None
    if held is None:
        flits = to_bytes(stream.materialize() if isinstance(stream, Held) else stream, et, bits)
        check(flits.shape[-1] == mem.row_bytes, f"a fed flit of {op.element_type} is {flits.shape[-1]} bytes", op)
    check(lanes in target.constants.LANES and mem.trf_bytes % lanes == 0, f"{lanes} lanes", op)
    check(per_lane > 0 and per_lane % mem.row_bytes == 0, f"bytes_per_lane {per_lane} is not whole rows", op)
    nflits = stream.shape[1] if flits is None else flits.shape[1]
    check(nflits * mem.row_bytes == lanes * per_lane,
          f"the feed delivers {nflits} flits, the load stores {lanes} x {per_lane} bytes", op)
    lane_bytes = mem.trf_bytes // lanes
    region_first, _ = op.region_rows(target)
    first = region_first + op.base_row
    start = first * mem.row_bytes
    check(first >= 0 and start + per_lane <= lane_bytes,
          f"rows {first}..{first + per_lane // mem.row_bytes - 1} leave the {lane_bytes}-byte lane", op)
    read_from = mem.trf_row[op.result.id]
    check(read_from * mem.row_bytes + per_lane <= lane_bytes, f"allocated rows from {read_from} leave the lane", op)
    if flits is not None:
        held = flits.reshape(rows.count, lanes, nrows, mem.row_bytes).view(row)[..., 0]
    loops = held.shape[1:]                  # (lanes, rows per lane), split alike on both sides
    order = (*range(1, len(loops) + 1), 0)
    noted = shortcut("trf_loaded")
    for (chip, cluster), sel in rows.groups():
        at = _stepped(rows.slice[sel])
        # the store writes every byte of those rows in the slices `at` and in no other slice
        dest = mem.trf_rows(chip, cluster, lanes, first, nrows, at if isinstance(at, slice) else False)
        dest = dest.view(row)[..., 0]    # (lanes, rows, slices)
        split = view_reshape(dest, (*loops, dest.shape[-1]))
        check(split is not None, "the TRF rows of a load split into the stream's loops", op)
        periodic = stored is None and isinstance(stream, Held) and isinstance(at, slice)
        period = _period(stream.equal_rows(), sel) if periodic else None
        if period:       # rows repeating every `period` rows: those rows each written into their repeats
            _store_periodic(split, at, held[sel[:period]].transpose(order), period)
        elif stored is None:
            _store(split, at, held[_slices(sel)].transpose(order))
        else:       # only some rows stored: each into its first slice, the copies left for later
            _store_held(mem, (chip, cluster, lanes, first, nrows), split, rows.slice[sel], stored[sel], held)
        if noted is not None:   # visa/interp/fast/copies.py: the slices this group filled alike
            noted(mem, stream, ("trf", int(chip), int(cluster)), mem.lane_rows(lanes, first, nrows),
                  np.asarray(rows.slice[sel], np.int64), sel)
    return TrfTensor(op, read_from, lane_bytes)


_BLOCK = 32         # slices a block of the transposing copy holds (8, 16, 32, 64 and whole measured on the
                    # 512^3 bf16 GEMM: 9.0, 8.4, 7.9, 8.2, 8.0 ms CPU a run, issue 38 item 2)
_BLOCKED = 1 << 22  # bytes from which the copy goes block by block (smaller ones are faster whole)


def _store(dest: np.ndarray, at: slice | np.ndarray, rows: np.ndarray) -> None:
    """dest[..., at] = rows, the slices innermost in `dest`. A large copy of a run of
    slices goes a block of slices at a time: a block's source rows stay in the cache while
    the copy walks the destination (issue 29: 256 slices x 32 KiB, 9 -> 2 ms)."""
    n = rows.shape[-1]
    if not isinstance(at, slice) or rows.nbytes < _BLOCKED or n <= _BLOCK:
        dest[..., at] = rows
        return
    dest = dest[..., at]
    for k in range(0, n, _BLOCK):
        dest[..., k:k + _BLOCK] = rows[..., k:k + _BLOCK]


def _period(equal: np.ndarray | None, sel: np.ndarray) -> int | None:
    """p when the rows `sel` repeat their first p rows over and over (`equal`: each row's
    first equal row, `Held.equal_rows`) and p is at most half of them, else None."""
    if equal is None or len(sel) < 2:
        return None
    local = equal[sel] - sel[0]
    p = int(local.max()) + 1
    if 2 * p > len(sel) or len(sel) % p or not np.array_equal(local, np.arange(len(sel)) % p):
        return None
    return p if np.array_equal(sel[:p], sel[0] + np.arange(p)) else None


def _store_periodic(dest: np.ndarray, at: slice, rows: np.ndarray, period: int) -> None:
    """dest[..., at] = rows repeated: slice k of `at` takes row k % period of `rows`
    (..., period), the slices innermost in `dest`; the source read once, the destination
    written in order."""
    part = dest[..., at]
    np.copyto(part.reshape(*part.shape[:-1], -1, period), rows[..., None, :])


def _store_repeats(dest: np.ndarray, slices: np.ndarray, stored: np.ndarray, held: np.ndarray) -> None:
    """dest[..., slices[i]] = held[stored[i]] for every i, the slices innermost in `dest`:
    each stored row written once into all the slices that hold it (a held switch broadcast,
    `Held.stored_rows`), never the written-out stream. When the slices are a stepped run
    and their rows repeat the first p of them over and over, one copy in the destination's
    order (`_store_periodic`): a pass per stored row wrote each cache line of the run twice
    or more, every 16th slice at a time (`drawn_s2_7`: 16 passes over 8 MiB a load)."""
    stored = np.asarray(stored, np.int64)
    at, period = _cycle(stored.tobytes(), np.asarray(slices, np.int64).tobytes())
    if period:
        _store_periodic(dest, at, np.moveaxis(held[stored[:period]], 0, -1), period)
        return
    for row, at in _repeats(stored.tobytes(), np.asarray(slices, np.int64).tobytes()):
        dest[..., at] = held[row][..., None]


def _store_held(mem: Memory, where: tuple[int, ...], dest: np.ndarray, slices: np.ndarray, stored: np.ndarray,
                held: np.ndarray) -> None:
    """`_store_repeats`, but only the first slice holding each stored row written now: the
    writes into the other slices wait until a reader or a writer of the TRF needs them
    (`Memory.trf_later`), and then copy those first slices' rows."""
    stored = np.asarray(stored, np.int64)
    rows, firsts, local, targets = _firsts(stored.tobytes(), np.asarray(slices, np.int64).tobytes(), dest.shape[-1])
    dest[..., firsts] = np.moveaxis(held[stored[rows]], 0, -1)

    def copy() -> None:
        _store_repeats(dest, slices, local, np.moveaxis(dest[..., firsts], -1, 0))
    mem.trf_later(*where, targets, copy)


@functools.lru_cache(maxsize=256)
def _firsts(stored: bytes, slices: bytes, n: int) -> tuple[np.ndarray, ...]:
    """(the first position holding each distinct stored row, in order; its slice; each
    position's index among them; a mask of the other slices of the `n`), remembered."""
    rows, at = np.frombuffer(stored, np.int64), np.frombuffer(slices, np.int64)
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    targets = np.zeros(n, np.bool_)
    targets[at] = True
    targets[at[first]] = False
    found = (first[order], at[first[order]], rank[inverse.reshape(-1)], targets)
    for a in found:
        a.setflags(write=False)
    return found


@functools.lru_cache(maxsize=256)
def _cycle(stored: bytes, slices: bytes) -> tuple[slice | np.ndarray, int | None]:
    """(the slices as `_stepped` gives them, p when they are a stepped run whose rows
    `stored` repeat their first p, p at most half of them, else None), remembered."""
    rows, at = np.frombuffer(stored, np.int64), _stepped(np.frombuffer(slices, np.int64))
    p = np.unique(rows).size
    if not isinstance(at, slice) or 2 * p > rows.size or rows.size % p:
        return at, None
    return at, p if np.array_equal(rows.reshape(-1, p), np.broadcast_to(rows[:p], (rows.size // p, p))) else None


@functools.lru_cache(maxsize=256)
def _repeats(stored: bytes, slices: bytes) -> tuple[tuple[int, slice | np.ndarray], ...]:
    """(stored row, the slices holding it: a slice when stepped) of `_store_repeats`' rows
    (int64 bytes), remembered: a switch's rows are the same every run."""
    rows, at = np.frombuffer(stored, np.int64), np.frombuffer(slices, np.int64)
    order, runs = np.unique(rows, return_inverse=True)
    runs = runs.reshape(-1)
    return tuple((row, _stepped(at[runs == k])) for k, row in enumerate(order.tolist()))


def take(arr: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
    """`np.take` along `axis`; `arr` itself when `index` reads every position in order."""
    if index.size == arr.shape[axis] and np.array_equal(index, np.arange(index.size)):
        return arr
    return np.take(arr, index, axis=axis)


def _slices(index: np.ndarray) -> slice | np.ndarray:
    """`index` as a slice when it is a contiguous range (a view, not a copy)."""
    if len(index) and _in_steps(index, int(index[0]), 1):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index


def _stepped(index: np.ndarray) -> slice | np.ndarray:
    """`index` as a slice when it is every step-th position in order (the slices of a
    placement on a part of them: 0, 2, 4, ...): a view, not a gathered copy."""
    if len(index) > 1 and index[1] > index[0]:
        first, step = int(index[0]), int(index[1] - index[0])
        if _in_steps(index, first, step):
            return slice(first, first + step * (len(index) - 1) + 1, step)
    return _slices(index)


_SHORT = 64
"""Indices up to this many are compared as Python ints (a contraction in a batched kernel's
loop reads a few slices a step: numpy's calls cost more there than the comparison)."""


def _in_steps(index: np.ndarray, first: int, step: int) -> bool:
    """Whether index[i] == first + i step for every i."""
    n = len(index)
    if n <= _SHORT:
        return index.tolist() == list(range(first, first + step * n, step))
    return bool(np.array_equal(index, first + step * np.arange(n)))


def check_read(outer: Any, trf: TrfTensor, mem: Memory, low: int, top: int) -> int:
    """Refuse a read of elements `low..top` of each lane that `weight_type` cannot decode
    from the load's cell format or that leaves the lane; the bits of one element."""
    wd = outer.weight_type.dtype
    check(wd in CELL_DTYPES.get(trf.op.cell_format, ()), f"weight_type {outer.weight_type} cannot read "
          f"{trf.op.cell_format} cells", outer)
    bits = mem.target.bits_of(wd) or 0
    check(low >= 0, "a TRF read before the tensor's first row", outer)
    check(trf.first_row * mem.row_bytes + -(-(top + 1) * bits // 8) <= trf.lane_bytes,
          f"the TRF read walk reaches element {top}, past the lane", outer)
    return bits


def _reach(mem: Memory, index: np.ndarray, bits: int) -> int:
    """The TRF rows of each lane, from the tensor's first, that a read of `index` reaches."""
    nbytes = -(-(int(index.max()) + 1) * bits // 8)
    return -(-nbytes // mem.row_bytes)


def weight_rows(outer: Any, trf: TrfTensor, rows: Rows, mem: Memory, index: np.ndarray) -> np.ndarray | None:
    """What tells the rows a `read_weights` of `index` decodes apart: the TRF bytes it
    decodes, per row, a view (rows, lanes, TRF rows, words) of the TRF (rows with equal
    bytes read equal weights); or, when a load noted that its slices hold copies (the
    `trf_held` hook), (rows, 1) of each row's first row holding the same bytes (rows with
    equal entries read equal weights; unequal ones may still); None when neither holds
    (no note, and the rows are not one (chip, cluster)'s consecutive or every n-th slices)."""
    groups = rows.slice_groups()
    index = np.asarray(index, np.int64)
    if len(groups) != 1 or not index.size:
        return None
    (chip, cluster), _, slices, _ = groups[0]
    bits = check_read(outer, trf, mem, int(index.min()), int(index.max()))
    first, n_rows = trf.first_row, _reach(mem, index, bits)
    noted = shortcut("trf_held")    # visa/interp/fast/copies.py: a load's note of its slices' copies
    held = None if noted is None else noted(mem, (chip, cluster), mem.lane_rows(trf.lanes, first, n_rows), slices)
    if held is not None:
        return held.reshape(-1, 1)
    at = _stepped(slices)      # consecutive slices, or every n-th (a placement on a part of them)
    if not isinstance(at, slice):
        return None
    lanes = mem.trf_lanes(chip, cluster, trf.lanes)[:, first:first + n_rows, at]
    lanes = lanes.transpose(2, 0, 1, 3)
    return lanes.view(np.uint64) if mem.row_bytes % 8 == 0 else lanes


def _groups(rows: Rows, which: np.ndarray | None) -> list[tuple[tuple[int, int], np.ndarray, np.ndarray]]:
    """((chip, cluster), positions in the result, rows read) of each (chip, cluster): every
    row in order, or the rows `which`."""
    if which is None:
        return [(key, sel, sel) for key, sel in rows.groups()]
    groups = list(rows.groups())
    if len(groups) == 1:     # every row is that group's
        return [(groups[0][0], np.arange(len(which)), which)] if len(which) else []
    out = []
    for key, sel in rows.groups():
        pos = np.flatnonzero(np.isin(which, sel))
        if pos.size:
            out.append((key, pos, which[pos]))
    return out


def read_weights(outer: Any, trf: TrfTensor, rows: Rows, mem: Memory, index: np.ndarray,
                 which: np.ndarray | None = None) -> np.ndarray:
    """Stored values at element `index` (any shape) of every lane: (rows, lanes, *index.shape),
    of every row in order, or of the rows `which` (an index array of rows).

    The cell format of the load and the contraction's `weight_type` fix the element width
    and decoding; an index past the lane is refused. Each (chip, cluster) copies the rows
    the read reaches, lane by lane, into one `(rows, lanes, bytes)` array first (lane `l`
    starts at byte `l * lane_bytes + first_row * 32` of the TRF), then indexes that; a read
    of whole rows in order whose decoding is a reinterpretation of the bytes (8-, 16- or
    32-bit cells) copies them straight into the result instead."""
    wd = outer.weight_type.dtype
    index = np.asarray(index, np.int64)
    bits = check_read(outer, trf, mem, int(index.min()) if index.size else 0,
                      int(index.max()) if index.size else 0)
    vd = value_dtype(wd)
    count = rows.count if which is None else len(which)
    out = mem.scratch((count, trf.lanes, *index.shape), vd)    # the groups cover every row
    if not index.size:
        return out
    first, n_rows = trf.first_row, _reach(mem, index, bits)
    flat = index.reshape(-1)
    # the read takes whole rows in order and decoding is a reinterpretation: one copy per group
    whole = (bits in (8, 16, 32) and vd.kind in "iu" and vd.itemsize * 8 == bits
             and flat.size * bits == n_rows * mem.row_bytes * 8 and np.array_equal(flat, np.arange(flat.size)))
    for (chip, cluster), dst, src in _groups(rows, which):
        at = rows.slice[src]    # some rows only: copies a load left for later (`trf_later`) into others may wait
        store = mem.trf(chip, cluster, None if which is None else at)
        store = store.reshape(trf.lanes, -1, mem.slices, mem.row_bytes)
        lanes = store[:, first:first + n_rows, _stepped(at)]
        words = lanes.view(np.uint64) if mem.row_bytes % 8 == 0 else lanes    # a row moves as whole words
        part = _slices(dst)
        if whole and isinstance(part, slice):
            dest = out[part].reshape(len(dst), trf.lanes, -1).view(words.dtype)
            np.copyto(dest.reshape(len(dst), trf.lanes, n_rows, -1), words.transpose(2, 0, 1, 3))
            continue
        data = np.ascontiguousarray(words.transpose(2, 0, 1, 3)).view(np.uint8).reshape(len(dst), trf.lanes, -1)
        if bits == 4:
            raw = (np.take(data, flat >> 1, axis=2) >> ((flat & 1) * 4).astype(np.uint8)) & 0xF
        else:
            raw = take(data.view(raw_dtype(bits)), flat, -1)
        out[dst] = from_raw(raw, wd, bits).reshape(len(dst), trf.lanes, *index.shape)
    return out


@runs("trf_load", env=True)
def _trf_load_step(op: Any, state: ProgramState) -> Any:
    return run_trf_load(op, state.input(op.input, op, repeated=True), state.rows, state.mem)
