"""The TRF operand of the interpreter's compiled float contraction (`visa.interp.fast.contract_jit`):
each row's TRF elements read as (element, lane) float32 bits, lanes innermost, the layout
the general kernel takes as its vector, or laid out for the exact kernel (`lay_paired`:
a slot pair's eight lanes each, `visa.interp.fast.contract_jit_exact`).

A row's operand is the first `n` elements of every lane of its slice's TRF tensor; lane
`l`'s element `e` sits at element `l * lane_elems + base + e` of the slice's TRF rows
(`cells`: (TRF rows, slices, elements per TRF row) codes). Many rows read the same codes
(a GEMM's weights are the same for every slice along M), so the driver widens one copy per
distinct slice. `classes` guesses each slice's class from the first TRF row the operand
touches (the first earlier slice with the same words there) and checks the guess word for
word over every touched row in one pass (a TRF row's slices sit side by side, so the
guess's words are in cache); a slice whose check fails gets its class from `digest` (the
position-weighted sum of its touched words: equal rows, equal digests) and `same` (word
for word again: a digest only proposes). A row's bytes outside the operand can only keep
two slices apart. Two slices are only ever shared when every touched word is equal; two
equal ones may still be widened twice (the results are the same bits either way).
`widened` copies each distinct slice's codes out a TRF row at a time (`gather`: (lane,
element) codes), finds their range, and writes their f32 bits in the layout the kernel
takes (`lay_plain`, `lay_paired`): by a shift when every code of a TRF's distinct slices
is a zero or a normal bf16 (the table's entry for those), else each through the table.

`ORDER` is compiled by `contract_jit._compiled` (the same disk cache); this module imports
nothing from numba.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["INLINE", "ORDER", "distinct", "gathered", "operand_rows", "spans", "widened", "words_of"]

_U8, _U16 = np.uint64(8), np.uint64(16)


def digest(words, slices, rows, out):
    """out[i] = the sum over slice slices[i]'s words of the TRF rows `rows` of word x (an
    odd weight by its position), in uint64 (wrapping: a digest only proposes). `words`:
    (TRF rows, slices, words a row), the slices of a TRF row side by side, walked in
    memory order."""
    n_words = words.shape[2]
    out[:] = 0
    for r in range(rows.size):
        row = rows[r]
        k = np.uint64(2 * r * n_words + 1)
        for i in range(slices.size):
            src, h = words[row, slices[i]], out[i]
            for c in range(n_words):
                h += src[c] * (k + np.uint64(2 * c))
            out[i] = h


def same(words, slices, other, rows, out):
    """out[i] = whether slices slices[i] and other[i] hold the same words in the TRF rows
    `rows` (walked as `digest` walks them; a slice is its own match without a read)."""
    n_words = words.shape[2]
    out[:] = True
    for r in range(rows.size):
        row = rows[r]
        for i in range(slices.size):
            if slices[i] == other[i] or not out[i]:
                continue
            a, b, diff = words[row, slices[i]], words[row, other[i]], np.uint64(0)
            for c in range(n_words):
                diff |= a[c] ^ b[c]
            if diff:
                out[i] = False


def _equal_words(a, b):
    """Whether the word rows a and b are equal."""
    diff = np.uint64(0)
    for c in range(a.size):
        diff |= np.uint64(a[c] ^ b[c])
    return diff == 0


def classes(words, slices, rows, key):
    """key[i] = the first j <= i whose slice slices[j] holds slice slices[i]'s words in the
    TRF rows `rows`, guessed from the first of them and checked over all (row by row, each
    row's slices side by side); -1 where the check failed. Returns how many failed."""
    n = slices.size
    first = words[rows[0]]
    reps = np.empty(n, np.int64)
    n_reps = 0
    for i in range(n):
        key[i] = i
        for k in range(n_reps):
            if _equal_words(first[slices[i]], first[slices[reps[k]]]):
                key[i] = reps[k]
                break
        if key[i] == i:
            reps[n_reps] = i
            n_reps += 1
    mine, theirs = slices.astype(np.uint64), np.empty(n, np.uint64)
    for i in range(n):
        theirs[i] = slices[key[i]]
    diff = np.zeros(n, np.uint64)
    for r in range(1, rows.size):
        row = words[rows[r]]
        for i in range(n):                              # branch-free: a failed guess is rare
            a, b, d = mine[i], theirs[i], np.uint64(0)
            for c in range(row.shape[1]):
                d |= row[a, c] ^ row[b, c]
            diff[i] |= d
    failed = 0
    for i in range(n):
        if diff[i]:
            key[i] = -1
            failed += 1
    return failed


@functools.lru_cache(maxsize=64)
def operand_rows(lane_elems, base, n, lanes, per_row):
    """The TRF rows holding some of the first `n` elements of a lane (lane `l`'s element `e`
    at element `l * lane_elems + base + e` of a slice's rows of `per_row` elements), sorted:
    the rows `digest` and `same` read whole (a row's other elements only make two slices
    less alike, never more)."""
    firsts = np.arange(lanes, dtype=np.int64) * lane_elems + base
    lo, hi = firsts // per_row, (firsts + n - 1) // per_row + 1
    out = np.unique(np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in zip(lo.tolist(), hi.tolist())]))
    out.setflags(write=False)                          # remembered: shared by every call with these numbers
    return out


def words_of(cells):
    """The slices' TRF rows as (TRF rows, slices, words) of the widest unsigned type that
    divides a slice's row (the same bytes, fewer compares)."""
    if cells.strides[2] != cells.itemsize:
        cells = np.ascontiguousarray(cells)
    row_bytes = cells.shape[2] * cells.itemsize
    for dtype in (np.uint64, np.uint32, np.uint16):
        if row_bytes % np.dtype(dtype).itemsize == 0 and np.dtype(dtype).itemsize >= cells.itemsize:
            return cells.view(dtype)
    return cells


def gather(cells, sls, rows, lane_elems, base, n, lanes, codes):
    """codes[k, l * n + e] = lane l's element e of slice sls[k] (at element `l * lane_elems +
    base + e` of the slice's TRF rows, every one of them in `rows`): walked a TRF row at a
    time, its slices side by side."""
    per_row = cells.shape[2]
    for r in range(rows.size):
        row = rows[r]
        for lane in range(lanes):
            first = lane * lane_elems + base
            lo, hi = max(row * per_row, first), min((row + 1) * per_row, first + n)
            if lo < hi:
                at = lane * n + lo - first
                for k in range(sls.size):
                    src = cells[row, sls[k], lo - row * per_row:hi - row * per_row]
                    dst = codes[k, at:at + hi - lo]     # views: no negative-index checks
                    for c in range(src.size):
                        dst[c] = src[c]


def code_bits(code, table, shift):
    """The f32 bits of a code: code << 16 (`shift`: every code a zero or a normal bf16, whose
    table entry that is) or its table entry."""
    if shift:
        return np.uint32(code) << np.uint32(16)
    return table[code]


def lay_plain(codes, n, lanes, table, shift, out, k0):
    """out[0, k0 + k, e * lanes + l] = the bits of codes[k, l * n + e] (`code_bits`)."""
    for k in range(codes.shape[0]):
        src, dst = codes[k], out[0, k0 + k]
        for lane in range(lanes):
            for e in range(n):
                dst[e * lanes + lane] = code_bits(src[lane * n + e], table, shift)


def lay_paired(codes, n, offs, table, shift, out, k0):
    """out[s, k0 + k] = (element, 16) bits of codes[k] (eight lanes, `gather`'s layout):
    element e's eight lanes, then element e + offs[s]'s (zeros past either end), the layout
    of the exact kernel's paired slots (`contract_jit_exact`). Unsigned indices: no
    negative-index checks."""
    un = np.uint64(n)
    for k in range(codes.shape[0]):
        src = codes[k]
        for s in range(offs.size):
            dst, d = out[s, k0 + k], offs[s]
            lo, hi = max(0, -d), min(n, n - d)
            for e in range(n):
                ue = np.uint64(e)
                for i in range(_U8):
                    dst[ue * _U16 + i] = code_bits(src[i * un + ue], table, shift)
                if lo <= e < hi:
                    ue2 = np.uint64(e + d)
                    for i in range(_U8):
                        dst[ue * _U16 + _U8 + i] = code_bits(src[i * un + ue2], table, shift)
                else:
                    for i in range(_U8):
                        dst[ue * _U16 + _U8 + i] = np.uint32(0)


def distinct(kernels, words, slices, rows):
    """key[i] = the index of the slice whose widened copy slice i shares: the first j <= i
    found to hold slices[i]'s words in the TRF rows `rows` (key[key[i]] = key[i]); `classes`,
    and where its guess failed `digest` and `same` among the failed slices."""
    key = np.empty(slices.size, np.int64)
    if kernels["classes"](words, slices, rows, key):
        pending = np.flatnonzero(key < 0)
        sub = slices[pending]
        digests = np.zeros(sub.size, np.uint64)
        kernels["digest"](words, sub, rows, digests)
        _, first, rep = np.unique(digests, return_index=True, return_inverse=True)
        other = first[rep.reshape(-1)]                            # the first pending slice of the same digest
        equal = np.zeros(sub.size, np.bool_)
        kernels["same"](words, sub, sub[other], rows, equal)
        key[pending] = pending[np.where(equal, other, np.arange(sub.size))]  # a false match: its own copy
    return key


def gathered(kernels, tensors, shape, mag, empty=np.empty, bounds=True):
    """(codes, shifts, top, low): the operand codes of every distinct slice, the slices of
    each (cells, slices, TRF rows the operand touches) of `tensors` in turn, as (operands,
    lanes x n) (`gather`); per operand whether its codes widen by a shift (every code of its
    entry of `tensors` a zero or a normal bf16: their table entries); the largest
    `mag`-masked code and the smallest nonzero one minus one (`mag` when every code is a
    zero). `empty(shape, dtype)` makes the arrays (the interpreter's pooled scratch). Without
    `bounds`, no code is scanned: 16-bit codes are assumed to widen by a shift and the range
    is (None, None), for a caller that finds it later (`contract_jit._scanned`)."""
    lane_elems, base, n, lanes = shape
    n_ops = sum(sls.size for _, sls, _ in tensors)
    codes = empty((n_ops, lanes * n), tensors[0][0].dtype)
    shifts = np.zeros(n_ops, np.bool_)
    top, low, k0 = 0, mag, 0
    for cells, sls, rows in tensors:
        part = codes[k0:k0 + sls.size]
        kernels["gather"](cells, sls, rows, *shape, part)
        if not bounds:
            shifts[k0:k0 + sls.size] = cells.itemsize == 2
            k0 += sls.size
            continue
        t, lo = kernels["_bounds"](part, mag)
        shifts[k0:k0 + sls.size] = cells.itemsize == 2 and t < 0x7F80 and lo + 1 >= 0x80
        top, low, k0 = max(top, t), min(low, lo), k0 + sls.size
    return (codes, shifts, top, low) if bounds else (codes, shifts, None, None)


def widened(kernels, tensors, shape, mag, table, offs, empty=np.empty, keep=None):
    """(bits, top, low): the operand of every distinct slice widened (`gathered`'s codes,
    top and low): with no `offs` (1, slices, n x lanes), else (offs, slices, n x 16) as
    `lay_paired` lays them out (eight lanes), each operand by a shift or through the table
    as `gathered` found. `empty(shape, dtype)` makes the arrays (the interpreter's pooled
    scratch: a batched GEMM's 32 MiB of widened weights would fault in every page of a
    fresh one on every run); `keep`, when given, makes the returned one (one kept longer)."""
    lane_elems, base, n, lanes = shape
    codes, shifts, top, low = gathered(kernels, tensors, shape, mag, empty)
    out = (keep or empty)((max(offs.size, 1), codes.shape[0], n * (2 * lanes if offs.size else lanes)), np.dtype(np.uint32))
    k0 = 0
    for _, sls, _ in tensors:
        part, shift = codes[k0:k0 + sls.size], bool(shifts[k0]) if sls.size else False
        if offs.size:
            kernels["lay_paired"](part, n, offs, table, shift, out, k0)
        else:
            kernels["lay_plain"](part, n, lanes, table, shift, out, k0)
        k0 += sls.size
    return out, top, low


ORDER = ("digest", "same", "_equal_words", "classes", "gather", "code_bits", "lay_plain", "lay_paired")
"""Compiled in this order."""
INLINE = ("_equal_words", "code_bits")
"""Inlined into their callers; the others are called from Python."""


def spans(outer: Any, trf: Any, rows: Any, mem: Any, n_elems: int) -> tuple[list, tuple]:
    """(the TRF row ranges `contract_jit_operand.operand` reads, as `CopyNotes.remember`'s
    spans; what else its widened operand depends on): a later contraction reading the same
    operand of the same TRF rows, unwritten since, takes the one widened before."""
    width = (mem.target.bits_of(outer.weight_type.dtype) or 8) // 8
    shape = (trf.lane_bytes // width, trf.first_row * mem.row_bytes // width, n_elems, trf.lanes)
    touched = operand_rows(*shape, mem.row_bytes // width)
    found, parts = [], []
    for (chip, cluster), sel in rows.groups():
        found.append((("trf", int(chip), int(cluster)), int(touched[0]), int(touched[-1]) + 1))
        parts.append((int(chip), int(cluster), np.asarray(rows.slice[sel], np.int64).tobytes()))
    return found, (outer.weight_type.name, shape, tuple(parts))
