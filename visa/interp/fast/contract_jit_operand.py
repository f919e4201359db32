"""The TRF operand of the interpreter's compiled float contraction (`visa.interp.fast.contract_jit`),
found once while the TRF rows it comes from stay unwritten.

A kernel cut in pieces runs one contraction a piece over the same loaded weights, and each
contraction used to find them again: which distinct TRF tensor each row reads (`classes`),
then their codes gathered, scanned and widened into the layout its kernel takes (`operand`).
The run's `CopyNotes` keep what was found (`forms`: a dict, `CopyNotes.remember`'s value for
the TRF row ranges the operand reads and what else it depends on, `contract_weights.spans`)
until a write meets those rows; a later contraction of the same weights, read to the same
length, takes the classes and any layout already made (the plain one of the matmul route,
the paired one of the exact kernel for the same slot shifts) instead of making them again.
The arrays of a kept layout are the run's (`Memory.run_scratch`), so they stay valid across
the run's programs; a new `forms` dict lets the previous one's arrays go. Every kept array
holds the bits a fresh one would: the same codes read from the same unwritten rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from visa.interp.fast import contract_jit_weights as jit_weights
from visa.interp.operands import _SIG_BITS
from visa.interp.trf import check_read
from visa.interp.values import widen_table

__all__ = ["classes", "code_range", "forms", "operand"]

_CLASSES = "classes"
_KEPT = "kept"


def code_range(top: int, low: int, mag: int, table_bits: np.ndarray, sig: int) -> Any:
    """`operands.code_range` from the largest and smallest nonzero magnitude code (the codes
    of every float operand type order their magnitudes): (unit exponent, top exponent), None
    when every code is a zero, False when an infinity or NaN is present or when a nonzero
    code widens to a zero or a subnormal (then the flush is kept, which is always right)."""
    if low > mag:
        return None
    top_field, low_field = (int(table_bits[top]) >> 23) & 0xFF, (int(table_bits[low]) >> 23) & 0xFF
    if top_field == 0xFF or low_field == 0:
        return False
    return low_field - 127 - (sig - 1), top_field - 127 + 1


def forms(outer: Any, trf: Any, rows: Any, mem: Any, n_elems: int) -> dict:
    """What the run keeps of the first `n_elems` elements of every lane of the rows' TRF
    tensors (module docstring): the dict an earlier contraction left when no write has met
    those TRF rows since, else a new one, kept from now on."""
    spans, tag = jit_weights.spans(outer, trf, rows, mem, n_elems)
    found = mem.copies.recall(spans, tag)
    if found is None:
        found = {}
        mem.copies.remember(spans, tag, found)
    return found


def classes(kernels: dict, outer: Any, trf: Any, rows: Any, mem: Any, n_elems: int,
            kept: dict | None = None) -> tuple[np.ndarray, list, tuple, int]:
    """(which distinct TRF tensor each row reads, per (chip, cluster) group of rows its
    (chip, cluster, the slices of its distinct tensors, the TRF rows the operand touches),
    the operand's shape `jit_weights.gather` takes, the bytes of an element). Rows whose TRF
    slices hold the same codes there (a GEMM's weights are the same for every slice along M)
    share one tensor: the TRF load's note says so when it has one, else they are compared.
    Taken from `kept` (`forms`) when found there, and put there."""
    width = check_read(outer, trf, mem, 0, n_elems - 1) // 8
    if kept is not None and _CLASSES in kept:
        return kept[_CLASSES]
    shape = (trf.lane_bytes // width, trf.first_row * mem.row_bytes // width, n_elems, trf.lanes)
    which = np.zeros(rows.count, np.int64)
    groups: list[tuple[int, int, np.ndarray, np.ndarray]] = []
    n_distinct = 0
    for (chip, cluster), sel in rows.groups():
        slices = np.ascontiguousarray(rows.slice[sel], np.int64)
        touched = jit_weights.operand_rows(*shape, mem.row_bytes // width)
        key = mem.copies.held_rows(("trf", int(chip), int(cluster)), touched, slices)   # visa/interp/fast/copies.py
        first = None if key is None else key == np.arange(key.size)   # the copies, in order of first use
        if first is None:
            cells = _cells(mem, chip, cluster, None, width)
            key = jit_weights.distinct(kernels, jit_weights.words_of(cells), slices, touched)
            first = key == np.arange(key.size)
        which[sel] = (np.cumsum(first) - 1 + n_distinct)[key]
        groups.append((int(chip), int(cluster), slices[first], touched))
        n_distinct += int(first.sum())
    found = (which, groups, shape, width)
    if kept is not None:
        kept[_CLASSES] = found
    return found


def _cells(mem: Any, chip: int, cluster: int, reading: np.ndarray | None, width: int) -> np.ndarray:
    """The TRF store of (chip, cluster) with the slices `reading` up to date (`Memory.trf`:
    only those read, `trf_later`), as elements of `width` bytes."""
    cells = mem.trf(chip, cluster, reading)
    return cells.view("<u2") if width == 2 else cells


def operand(kernels: dict, outer: Any, trf: Any, rows: Any, mem: Any, n_elems: int, offs: np.ndarray,
            per_row: bool = False, assume: bool = False, kept: dict | None = None) -> tuple[Any, np.ndarray, Any]:
    """The first `n_elems` elements of every lane of the rows' TRF tensors, widened: with no
    `offs` (distinct tensors, n_elems, lanes) float32, else `jit_weights.lay_paired`'s
    (offs, distinct tensors, n_elems x 2 lanes) for the TRF reads offs[s] elements on; which
    of them each row reads (`classes`); their code range. With `per_row`, when every row
    reads a tensor of its own (a batched GEMM), the first is `jit_weights.gathered`'s
    (codes, shifts) instead: the exact kernel lays each row's out in cache, just before its
    tiles; with `assume` and 16-bit codes, their range is None (not scanned: the kernel
    finds it, `contract_jit._scanned`). `kept` (`forms`): the widened layout is taken from
    there when made before, else made in the run's scratch and put there."""
    which, groups, shape, width = classes(kernels, outer, trf, rows, mem, n_elems, kept)
    et = outer.weight_type
    table = widen_table(et)
    mag = 0x7FFF if width == 2 else 0x7F
    tensors = [(_cells(mem, chip, cluster, sls, width), sls, touched) for chip, cluster, sls, touched in groups]
    if per_row and offs.size and sum(t[1].size for t in tensors) == which.size:
        bounds = not (assume and width == 2)
        codes, shifts, top, low = jit_weights.gathered(kernels, tensors, shape, mag, mem.scratch, bounds)
        return (codes, shifts), which, code_range(top, low + 1, mag, table, _SIG_BITS[et.name]) if bounds else None
    name = ("laid", offs.tobytes())
    if kept is not None and name in kept:
        return kept[name]
    keep = mem.scratch
    if kept is not None:    # the first kept array starts the run's kept value, the others join it
        more = kept.get(_KEPT, False)
        keep, kept[_KEPT] = (lambda s, d: mem.run_scratch(s, d, more)), True
    wt, top, low = jit_weights.widened(kernels, tensors, shape, mag, table, offs, mem.scratch, keep)
    wt = wt.view(np.float32) if offs.size else wt[0].view(np.float32).reshape(-1, n_elems, trf.lanes)
    found = (wt, which, code_range(top, low + 1, mag, table, _SIG_BITS[et.name]))
    if kept is not None:
        kept[name] = found
    return found
